// The edges of contiguous rows at any source and destination alignment: the up to four
// destination words before a row's first whole 16-byte block and the up to four from its
// last (rows16.wgsl moves the whole blocks between). A piece's dimension 0 has 8 slots
// and strides 0, so the walk stays at the row's first byte; element_bytes is the row's
// length. Words are written through merge.wgsl (neighbouring rows may own a word's
// other bytes). The backend prepends the `src`/`dst` bindings and `load_src`, then
// pieces.wgsl (whose entry point calls copy_at) and merge.wgsl.

fn copy_at(p: ptr<function, Piece>, w: ptr<function, Walk>) {
    let d = (*w).dst;
    let length = (*p).element_bytes;
    let first_block = (d + 15u) & ~15u;  // the row's whole blocks: [first_block, last_block)
    let last_block = max((d + length) & ~15u, first_block);
    let k = (*w).index[0];
    var word = (d >> 2u) + k;  // head: words before the first whole block
    if (k >= 4u) {
        word = (last_block >> 2u) + k - 4u;  // tail: words from the last whole block's end
    } else if (word * 4u >= first_block) {
        return;
    }
    merge_word(word, d, (*w).src, length);
}
