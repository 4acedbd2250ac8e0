// Short contiguous rows of 1- or 2-byte elements whose destination rows are whole aligned
// words but whose source rows start inside a word (a slice that drops one 2-byte column):
// each destination word is the two source words around its bytes, funnel-shifted: two
// loads and a plain store, no per-element gathering and no atomics. Offsets and strides:
// the source's in bytes, the destination's in words. The backend prepends `alias Word =
// u32`, the bindings and `load_src`, then pieces.wgsl and elements.wgsl (whose entry point
// calls copy_at).

fn copy_at(p: ptr<function, Piece>, w: ptr<function, Walk>) {
    let at = (*w).src;
    let shift = (at & 3u) * 8u;
    var word = load_src(at >> 2u);
    if (shift != 0u) {
        word = (word >> shift) | (load_src((at >> 2u) + 1u) << (32u - shift));
    }
    dst[(*w).dst] = word;
}
