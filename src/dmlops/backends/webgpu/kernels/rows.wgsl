// Contiguous rows of bytes at any source and destination alignment (1- and 2-byte
// elements, and rows whose offsets are not word aligned). A piece's dimension 0 counts the
// destination u32 words a row can touch, with strides of 4 bytes; element_bytes is the
// row's length in bytes. A thread owns one destination word: through merge.wgsl, a word
// the row covers is funnel-shifted from two source words and stored whole, a word at a
// row's edge is merged byte by byte (neighbouring rows may own its other bytes). The
// backend prepends the `src`/`dst` bindings and `load_src`, then pieces.wgsl (whose entry
// point calls copy_at) and merge.wgsl.

fn copy_at(p: ptr<function, Piece>, w: ptr<function, Walk>) {
    let k = (*w).index[0];
    let d_row = (*w).dst - 4u * k;
    merge_word((d_row >> 2u) + k, d_row, (*w).src - 4u * k, (*p).element_bytes);
}
