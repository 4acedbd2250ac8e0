// General strided copy of whole words: `Word` is u32 (4- and 8-byte elements, and aligned
// rows of smaller ones) or vec4<u32> (16-byte aligned contiguous rows; reordered by
// `load_src` for rows read backwards). Dimension 0 is folded in two (its first half
// walked, the element count in pad0): an invocation loads element k and element k + h
// (h = ceil(count / 2)), then stores both. The backend prepends `alias Word`, the
// `src`/`dst` bindings and `load_src`, then pieces.wgsl, whose entry point calls copy_at.

fn copy_at(p: ptr<function, Piece>, w: ptr<function, Walk>) {
    let s = (*w).src;
    let d = (*w).dst;
    let n = (*p).pad0;
    let h = (n + 1u) / 2u;
    let a = load_src(s);
    if ((*w).index[0] + h < n) {  // the element half a row on
        let b = load_src(s + h * (*p).src_strides[0]);
        dst[d] = a;
        dst[d + h * (*p).dst_strides[0]] = b;
        return;
    }
    dst[d] = a;
}
