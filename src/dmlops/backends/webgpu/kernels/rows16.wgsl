// The whole 16-byte destination blocks of contiguous rows at any source alignment: one
// thread stores one vec4<u32> assembled from five source words with funnel shifts
// (rows.wgsl merges the edges). A piece's dimension 0 counts the blocks a row can hold,
// with strides 0 (the walk stays at the row's first byte); element_bytes is the row's
// length; offsets are bytes. The backend prepends `src` (u32 words) and `dst`
// (vec4<u32>) bindings and `load_src`, then pieces.wgsl, whose entry point calls copy_at.

fn copy_at(p: ptr<function, Piece>, w: ptr<function, Walk>) {
    let d = (*w).dst;
    let block = ((d + 15u) & ~15u) + 16u * (*w).index[0];
    if (block + 16u > d + (*p).element_bytes) {
        return;
    }
    let at = (*w).src + (block - d);
    let i = at >> 2u;
    let shift = (at & 3u) * 8u;
    var v = vec4<u32>(load_src(i), load_src(i + 1u), load_src(i + 2u), load_src(i + 3u));
    if (shift != 0u) {
        let next = vec4<u32>(v.y, v.z, v.w, load_src(i + 4u));
        v = (v >> vec4<u32>(shift)) | (next << vec4<u32>(32u - shift));
    }
    dst[block >> 4u] = v;
}
