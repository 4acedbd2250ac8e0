// Short contiguous rows of 1- or 2-byte elements whose destination rows are whole aligned
// words but whose source rows start inside a word (a slice that drops one 2-byte column):
// each destination word is the two source words around its bytes, funnel-shifted: two
// loads and a plain store, no per-element gathering and no atomics. Dimension 0 is folded
// in two as in strided.wgsl (its first half walked, the row's word count in pad0): an
// invocation moves word k and word k + h (h = ceil(count / 2)); or, where pad1 is 1 (rows
// of high-rank pieces), the whole row, each source word loaded once. Offsets and strides:
// the source's in bytes, the destination's in words. The backend prepends `alias Word =
// u32`, the bindings and `load_src`, then pieces.wgsl, elements.wgsl (whose entry point
// calls copy_at) and source_word.wgsl.

fn copy_at(p: ptr<function, Piece>, w: ptr<function, Walk>) {
    let n = (*p).pad0;
    if ((*p).pad1 != 0u) {  // (rows are contiguous: source bytes, destination words)
        let at = (*w).src >> 2u;
        let shift = ((*w).src & 3u) * 8u;
        let d = (*w).dst;
        if (shift == 0u) {
            for (var k = 0u; k < n; k++) {
                dst[d + k] = load_src(at + k);
            }
            return;
        }
        var low = load_src(at);
        for (var k = 0u; k < n; k++) {
            let high = load_src(at + k + 1u);
            dst[d + k] = (low >> shift) | (high << (32u - shift));
            low = high;
        }
        return;
    }
    let h = (n + 1u) / 2u;
    let a = source_word((*w).src);
    if ((*w).index[0] + h < n) {  // the word half a row on
        let b = source_word((*w).src + h * (*p).src_strides[0]);
        dst[(*w).dst] = a;
        dst[(*w).dst + h * (*p).dst_strides[0]] = b;
        return;
    }
    dst[(*w).dst] = a;
}
