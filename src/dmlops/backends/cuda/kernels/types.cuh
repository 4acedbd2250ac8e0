// The element types of the converting kernels (convert.cu) and the sequence kernel
// (sequence.cu) by their type codes (convert.py's TYPE_CODES): PICK(code) is the storage
// type, float16 carried as its bits.

#define STORAGE(t) STORAGE_##t
#define STORAGE_0 unsigned short
#define STORAGE_1 float
#define STORAGE_2 double
#define STORAGE_3 signed char
#define STORAGE_4 unsigned char
#define STORAGE_5 short
#define STORAGE_6 unsigned short
#define STORAGE_7 int
#define STORAGE_8 unsigned int
#define STORAGE_9 long long
#define STORAGE_10 unsigned long long
#define PICK(t) STORAGE(t)
