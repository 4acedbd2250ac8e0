// The whole 16-byte destination blocks of contiguous rows at any source alignment: a
// thread stores vec4<u32> blocks assembled from five source words with funnel shifts
// (rows.wgsl merges the edges). A piece's dimension 0 counts half the blocks a row can
// hold (an invocation moves block k and block k + that half, both loaded before either is
// stored), with strides 0 (the walk stays at the row's first byte); element_bytes is the
// row's length; offsets are bytes. The backend prepends `src` (u32 words) and `dst`
// (vec4<u32>) bindings and `load_src`, then pieces.wgsl, whose entry point calls copy_at.

// Block `k` of the row at destination byte `d` (source byte `s`).
fn block_at(d: u32, s: u32, k: u32) -> vec4<u32> {
    let block = ((d + 15u) & ~15u) + 16u * k;
    let at = s + (block - d);
    let i = at >> 2u;
    let shift = (at & 3u) * 8u;
    var v = vec4<u32>(load_src(i), load_src(i + 1u), load_src(i + 2u), load_src(i + 3u));
    if (shift != 0u) {
        let next = vec4<u32>(v.y, v.z, v.w, load_src(i + 4u));
        v = (v >> vec4<u32>(shift)) | (next << vec4<u32>(32u - shift));
    }
    return v;
}

fn copy_at(p: ptr<function, Piece>, w: ptr<function, Walk>) {
    let d = (*w).dst;
    let s = (*w).src;
    let end = d + (*p).element_bytes;
    let first = ((d + 15u) & ~15u) + 16u * (*w).index[0];
    let second = first + 16u * (*p).sizes[0];
    if (first + 16u > end) {
        return;
    }
    let a = block_at(d, s, (*w).index[0]);
    if (second + 16u <= end) {
        let b = block_at(d, s, (*w).index[0] + (*p).sizes[0]);
        dst[first >> 4u] = a;
        dst[second >> 4u] = b;
        return;
    }
    dst[first >> 4u] = a;
}
