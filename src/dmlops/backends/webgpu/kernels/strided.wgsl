// General strided copy of whole words: `Word` is u32 (4- and 8-byte elements, and aligned
// rows of smaller ones) or vec4<u32> (16-byte aligned contiguous rows; reordered by
// `load_src` for rows read backwards). Dimension 0 walks pairs of elements (its strides
// doubled, the element count in pad0): an invocation loads both, then stores both. The
// backend prepends `alias Word`, the `src`/`dst` bindings and `load_src`, then
// pieces.wgsl, whose entry point calls copy_at.

fn copy_at(p: ptr<function, Piece>, w: ptr<function, Walk>) {
    let s = (*w).src;
    let d = (*w).dst;
    let a = load_src(s);
    if (2u * (*w).index[0] + 1u < (*p).pad0) {  // the pair's second element
        let b = load_src(s + bitcast<u32>(bitcast<i32>((*p).src_strides[0]) >> 1u));
        dst[d] = a;
        dst[d + ((*p).dst_strides[0] >> 1u)] = b;
        return;
    }
    dst[d] = a;
}
