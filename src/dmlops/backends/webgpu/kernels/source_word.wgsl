// The four source bytes from byte `at` on, as one word: two aligned loads and a funnel
// shift (merge.wgsl, funnel.wgsl). `load_src` reads u32 words.

fn source_word(at: u32) -> u32 {
    let shift = (at & 3u) * 8u;
    let low = load_src(at >> 2u);
    if (shift == 0u) {
        return low;
    }
    return (low >> shift) | (load_src((at >> 2u) + 1u) << (32u - shift));
}
