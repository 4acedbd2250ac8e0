// Indexed copies (gather / scatter). A row is the last dimension when the index does not
// change along it, else one element; a warp moves a long row in wide chunks, a thread a
// short one. The meta table travels as a kernel parameter (__grid_constant__: read from
// the constant bank, the same for every thread; no device memory, nothing to upload):
//   [0] rank  [1] axes  [2] row length (elements)  [3] chunk bytes  [4] chunks per row
//   [5] scatter  [6] index type (0 int32, 1 int64, 2 uint32, 3 uint64)  [7] negative indices
//   [8] out of range: 0 drop (scatters; gathers clamp), 1 skip, 2 clamp (WebNN)  [9] element size  [10] tuple stride  [11] src offset (elements)
//   [12] dst offset  [13] index offset (index elements)  [14] row src stride  [15] row dst stride
//   [16] reversing dimension (REVERSE_SUBSEQUENCES; -1: none)
//   [17 + 6d ..]: shape, src, dst, index, slot and order stride of outer dimension d
//   then per axis t: size, stride, slot stride
//   [META_WORDS - 1] lanes a row: 32 (a warp) for rows of 32 chunks or more, else a team of
//   the power of two at or over its chunks where few rows leave the chip idle, else 1
// Gathers clamp each index into its axis (reads stay inside the input); scatters drop a row
// whose index is out of range, and a row whose slot a row later in index order also writes
// (the winner table holds, per slot, the latest order that writes it; for a few rows,
// dmlops_indexed_scan instead has each row look for a later one to its slot: one launch).
typedef unsigned char u8;

// 16-byte chunks a warp moves per unit of work on long rows (four per lane)
#define SEGMENT 128

#define META_WORDS 112
#define LANES_WORD (META_WORDS - 1)
struct Meta { long long v[META_WORDS]; };

__device__ __forceinline__ long long read_index(const u8* base, long long at, int type, bool* huge)
{
    *huge = false;
    switch (type) {
    case 0: return (long long)((const int*)base)[at];
    case 1: return ((const long long*)base)[at];
    case 2: return (long long)((const unsigned int*)base)[at];
    default: {
        const unsigned long long v = ((const unsigned long long*)base)[at];
        *huge = v > 0x7fffffffffffffffULL;
        return (long long)v;
    }
    }
}

// the row's source and destination element offsets, slot and order; false: row dropped.
// O: the offsets' type (int where every offset of the launch fits); SLOTS: slot and order
// wanted (scatters whose targets may meet)
template <typename I, typename O, bool SLOTS>
__device__ __forceinline__ bool locate(const long long* __restrict__ meta, const u8* idx,
    I m, O* src, O* dst, long long* slot, long long* order)
{
    const int rank = (int)meta[0];
    const int axes = (int)meta[1];
    O s = (O)meta[11], d = (O)meta[12], x = (O)meta[13];
    long long l = 0, o = 0;
    O p = 0;
    const int reverse = (int)meta[16];
    const long long* dims = meta + 17;
    for (int k = rank - 1; k >= 0; --k) {
        const I n = (I)dims[6 * k];
        const I q = m / n;
        const O c = (O)(m - q * n);
        m = q;
        if (k == reverse) p = c;
        s += c * (O)dims[6 * k + 1];
        d += c * (O)dims[6 * k + 2];
        x += c * (O)dims[6 * k + 3];
        if (SLOTS) {
            l += c * dims[6 * k + 4];
            o += c * dims[6 * k + 5];
        }
    }
    const long long* ax = dims + 6 * rank;
    const bool scatter = meta[5] != 0;
    O moved = 0;
    for (int t = 0; t < axes; ++t) {
        const long long size = ax[3 * t];
        bool huge;
        long long k = read_index(idx, (long long)x + t * meta[10], (int)meta[6], &huge);
        if (reverse >= 0) {  // a length L, clamped into [0, size]: p < L reads L - 1 - p
            const long long length = huge || k > size ? size : (k < 0 ? 0 : k);
            k = p < length ? length - 1 - p : p;
            moved += (O)k * (O)ax[3 * t + 1];
            continue;
        }
        if (meta[8] == 2) {  // clamped into [-size, size - 1] first (WebNN)
            if (huge || k >= size) { huge = false; k = size - 1; }
            else if (k < -size) k = -size;
        }
        if (meta[7] && k < 0) k += size;
        if (huge || k < 0 || k >= size) {
            if (scatter) return false;
            k = huge || k >= size ? size - 1 : 0;  // gathers read inside the input
        }
        moved += (O)k * (O)ax[3 * t + 1];
        if (SLOTS) l += k * ax[3 * t + 2];
    }
    if (scatter) d += moved; else s += moved;
    *src = s;
    *dst = d;
    *slot = l;
    *order = o;
    return true;
}

template <typename I>
__device__ void winner_pass(const long long* __restrict__ meta, const u8* idx, int* winner, I rows)
{
    for (I m = blockIdx.x * (I)blockDim.x + threadIdx.x; m < rows; m += (I)gridDim.x * blockDim.x) {
        long long s, d, slot, order;
        if (locate<I, long long, true>(meta, idx, m, &s, &d, &slot, &order))
            atomicMax(winner + slot, (int)order);
    }
}

extern "C" __global__ void dmlops_indexed_winner(const __grid_constant__ Meta table,
    unsigned long long index, int* winner, long long rows)
{
    const long long* meta = table.v;
    if (rows < 0x7fffffffLL) winner_pass<int>(meta, (const u8*)index, winner, (int)rows);
    else winner_pass<long long>(meta, (const u8*)index, winner, rows);
}

template <typename V>
__device__ __forceinline__ void move(const u8* from, u8* to) { *(V*)to = *(const V*)from; }

__device__ __forceinline__ void move_chunk(const u8* from, u8* to, long long chunk)
{
    switch (chunk) {
    case 1: move<unsigned char>(from, to); break;
    case 2: move<unsigned short>(from, to); break;
    case 4: move<unsigned int>(from, to); break;
    case 8: move<unsigned long long>(from, to); break;
    default: move<uint4>(from, to); break;
    }
}

// SCAN with `known` (dmlops_indexed_scan_shared): every row's slot (-1: dropped) and order,
// found once per block in shared memory, against which a row looks for a later one
struct Known { const int* slots; const int* orders; };

// a winning row's team (warp) or thread marks its slot free again once it has moved the
// row (`clears`): the table is clean for the next call without a clearing of its own. Only
// where one team or thread moves a whole row (the host asks for it only then), so that no
// other part of the winning row still looks at the slot.
__device__ __forceinline__ void free_slot(int* winner, long long slot, int lanes, int lane,
    unsigned team)
{
    if (lanes > 1) {
        __syncwarp(team);
        if (lane == 0) winner[slot] = -1;
    } else {
        winner[slot] = -1;
    }
}

template <typename I, typename O, bool SCAN, bool SLOTS>
__device__ void indexed(const long long* __restrict__ meta, const u8* src_base, u8* dst_base,
    const u8* idx, int* winner, I rows, Known known = Known{nullptr, nullptr}, bool clears = false)
{
    const long long chunks = meta[4];
    const long long chunk = meta[3];
    const long long es = meta[9];
    const bool by_element = chunk == es;
    // a warp per row for long rows, a team of lanes (a power of two) or a thread per short one
    const I lanes = (I)meta[LANES_WORD];
    const bool warp_rows = lanes == 32;
    const I lane = (I)(threadIdx.x & (lanes - 1));
    // the lanes of this thread's team within its warp
    const unsigned team = warp_rows ? 0xffffffffu
        : ((1u << lanes) - 1u) << ((threadIdx.x & 31) & ~(unsigned)(lanes - 1));
    const I first = (blockIdx.x * (I)blockDim.x + threadIdx.x) / lanes;
    const I step = (I)gridDim.x * blockDim.x / lanes;
    if (!SCAN && warp_rows && chunk == 16 && !by_element) {
        // long 16-byte rows cut in segments of SEGMENT chunks, a warp per segment: work in
        // pieces small enough that the launch's last blocks do not leave the chip idle
        const long long segments = (chunks + SEGMENT - 1) / SEGMENT;
        const long long units = (long long)rows * segments;
        for (long long u = first; u < units; u += step) {
            const I m = (I)(u / segments);
            const long long segment = u - (long long)m * segments;
            O s, d;
            long long slot, order;
            if (!locate<I, O, SLOTS>(meta, idx, m, &s, &d, &slot, &order)) continue;
            if (SLOTS && winner != nullptr && winner[slot] != (int)order) continue;
            const uint4* from = (const uint4*)(src_base + (long long)s * es);
            uint4* to = (uint4*)(dst_base + (long long)d * es);
            const long long end = min(chunks, (segment + 1) * SEGMENT);
            long long c = segment * SEGMENT + lane;
            // four loads in flight per lane, through the read-only cache path and kept in
            // L2 (a row gathered again, as an embedding's repeated ids are, is found there:
            // the embedding 3-5 % faster on the H200 than with evict-first loads)
            for (; c + 3 * 32 < end; c += 4 * 32) {
                const uint4 a = __ldg(from + c), b = __ldg(from + c + 32);
                const uint4 e = __ldg(from + c + 64), f = __ldg(from + c + 96);
                __stcs(to + c, a);  // streaming stores: the rows are not read again here
                __stcs(to + c + 32, b);
                __stcs(to + c + 64, e);
                __stcs(to + c + 96, f);
            }
            for (; c < end; c += 32) __stcs(to + c, __ldg(from + c));
            if (SLOTS && clears && winner != nullptr) free_slot(winner, slot, lanes, lane, team);
        }
        return;
    }
    for (I m = first; m < rows; m += step) {
        O s, d;
        long long slot, order;
        if (!locate<I, O, SLOTS>(meta, idx, m, &s, &d, &slot, &order)) continue;
        if (SLOTS && winner != nullptr && winner[slot] != (int)order) continue;
        if (SCAN) {  // dropped where a row later in index order writes the same slot
            bool later = false;
            if (known.slots != nullptr) {
                const int mine = (int)slot, when = (int)order;
                for (I k = lane; k < rows && !later; k += lanes)
                    later = known.slots[k] == mine && known.orders[k] > when;
            }
            for (I k = lane; known.slots == nullptr && k < rows && !later; k += lanes) {
                O s2, d2;
                long long slot2, order2;
                later = k != m && locate<I, O, SLOTS>(meta, idx, k, &s2, &d2, &slot2, &order2)
                    && slot2 == slot && order2 > order;
            }
            if (lanes > 1) later = __any_sync(team, later);
            if (later) continue;
        }
        if (chunk == 16 && !by_element) {  // 16-byte rows: four loads in flight per lane
            const uint4* from = (const uint4*)(src_base + (long long)s * es);
            uint4* to = (uint4*)(dst_base + (long long)d * es);
            long long c = lane;
            for (; c + 3 * lanes < chunks; c += 4 * lanes) {
                const uint4 a = __ldcs(from + c), b = __ldcs(from + c + lanes);
                const uint4 e = __ldcs(from + c + 2 * lanes), f = __ldcs(from + c + 3 * lanes);
                __stcs(to + c, a);
                __stcs(to + c + lanes, b);
                __stcs(to + c + 2 * lanes, e);
                __stcs(to + c + 3 * lanes, f);
            }
            for (; c < chunks; c += lanes) __stcs(to + c, __ldcs(from + c));
            if (SLOTS && clears && winner != nullptr) free_slot(winner, slot, lanes, lane, team);
            continue;
        }
        for (long long c = lane; c < chunks; c += lanes) {
            if (by_element) {  // element by element along the row, any strides
                const long long from = (long long)s + c * meta[14], to = (long long)d + c * meta[15];
                move_chunk(src_base + from * es, dst_base + to * es, es);
            } else {  // a contiguous row in wide chunks
                move_chunk(src_base + (long long)s * es + c * chunk,
                    dst_base + (long long)d * es + c * chunk, chunk);
            }
        }
        if (SLOTS && clears && winner != nullptr) free_slot(winner, slot, lanes, lane, team);
    }
}

// `clears`: the winning rows free their slots (free_slot) and no call clears the table
extern "C" __global__ void dmlops_indexed(const __grid_constant__ Meta table,
    unsigned long long source, unsigned long long target, unsigned long long index,
    int* winner, long long rows, int clears)
{
    const long long* meta = table.v;
    const u8* s = (const u8*)source;
    u8* d = (u8*)target;
    const u8* x = (const u8*)index;
    const Known none{nullptr, nullptr};
    if (rows < 0x7fffffffLL)
        indexed<int, long long, false, true>(meta, s, d, x, winner, (int)rows, none, clears != 0);
    else
        indexed<long long, long long, false, true>(meta, s, d, x, winner, rows, none, clears != 0);
}

// every offset of the launch fits an int, and no slots are wanted (gathers; scatters whose
// targets never meet): 32-bit offset arithmetic
extern "C" __global__ void dmlops_indexed_lean(const __grid_constant__ Meta table,
    unsigned long long source, unsigned long long target, unsigned long long index, int rows)
{
    indexed<int, int, false, false>(table.v, (const u8*)source, (u8*)target,
        (const u8*)index, nullptr, rows);
}

extern "C" __global__ void dmlops_indexed_scan(const __grid_constant__ Meta table,
    unsigned long long source, unsigned long long target, unsigned long long index,
    long long rows)
{
    const long long* meta = table.v;
    indexed<int, long long, true, true>(meta, (const u8*)source, (u8*)target, (const u8*)index,
        nullptr, (int)rows);
}

// rows a block's shared memory holds the slots and orders of (two ints a row: 32 KiB)
#define SHARED_SCAN_ROWS 4096

// dmlops_indexed_scan for up to SHARED_SCAN_ROWS rows whose slots fit an int: each block
// first finds every row's slot and order once, in shared memory, so a row's look for a
// later one to its slot reads shared memory instead of locating every other row (one launch
// where a winner table took three: its clearing, a winner pass and the copy)
extern "C" __global__ void dmlops_indexed_scan_shared(const __grid_constant__ Meta table,
    unsigned long long source, unsigned long long target, unsigned long long index,
    long long rows)
{
    __shared__ int slots[SHARED_SCAN_ROWS];
    __shared__ int orders[SHARED_SCAN_ROWS];
    const long long* meta = table.v;
    const int n = (int)rows;
    for (int k = threadIdx.x; k < n; k += blockDim.x) {
        long long s, d, slot, order;
        const bool kept = locate<int, long long, true>(meta, (const u8*)index, k, &s, &d,
            &slot, &order);
        slots[k] = kept ? (int)slot : -1;
        orders[k] = (int)order;
    }
    __syncthreads();
    indexed<int, long long, true, true>(meta, (const u8*)source, (u8*)target,
        (const u8*)index, nullptr, n, Known{slots, orders});
}
