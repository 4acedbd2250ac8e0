// General strided copy of whole words: `Word` is u32 (4- and 8-byte elements, and aligned
// rows of smaller ones) or vec4<u32> (16-byte aligned contiguous rows; reordered by
// `load_src` for rows read backwards). The backend prepends `alias Word`, the `src`/`dst`
// bindings and `load_src`, then pieces.wgsl, whose entry point calls copy_at.

fn copy_at(p: ptr<function, Piece>, w: ptr<function, Walk>) {
    dst[(*w).dst] = load_src((*w).src);
}
