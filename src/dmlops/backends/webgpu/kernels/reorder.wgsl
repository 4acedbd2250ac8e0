// Put the elements of a 16-byte vector read from a backwards row back in order: the
// vector's four words reversed, then each word's 2-byte halves or bytes reversed, or
// (8-byte elements) its two word pairs swapped. strided.wgsl's `load_src` applies one.

fn reverse_words(v: vec4<u32>) -> vec4<u32> {
    return v.wzyx;
}

fn reverse_pairs(v: vec4<u32>) -> vec4<u32> {
    return v.zwxy;
}

fn reverse_halves(v: vec4<u32>) -> vec4<u32> {
    let w = v.wzyx;
    return (w << vec4<u32>(16u)) | (w >> vec4<u32>(16u));
}

fn reverse_bytes(v: vec4<u32>) -> vec4<u32> {
    let w = v.wzyx;
    return ((w & vec4<u32>(0xffu)) << vec4<u32>(24u)) | ((w & vec4<u32>(0xff00u)) << vec4<u32>(8u))
        | ((w >> vec4<u32>(8u)) & vec4<u32>(0xff00u)) | (w >> vec4<u32>(24u));
}

// The same for one word (the word pick kernels): its two halves, or its four bytes, swapped.
fn reverse_word_halves(v: u32) -> u32 {
    return (v << 16u) | (v >> 16u);
}

fn reverse_word_bytes(v: u32) -> u32 {
    return ((v & 0xffu) << 24u) | ((v & 0xff00u) << 8u) | ((v >> 8u) & 0xff00u) | (v >> 24u);
}
