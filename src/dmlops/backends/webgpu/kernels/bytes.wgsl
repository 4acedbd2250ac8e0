// Strided copy of 1-, 2-, 4- or 8-byte elements at any byte offset, bit-exact: each
// destination word an element touches is written through merge.wgsl. Offsets and strides
// are in bytes. The backend prepends the `src`/`dst` bindings and `load_src`, then
// pieces.wgsl (whose entry point calls copy_at) and merge.wgsl.

fn copy_at(p: ptr<function, Piece>, w: ptr<function, Walk>) {
    let d = (*w).dst;
    let size = (*p).element_bytes;
    for (var word = d >> 2u; word <= (d + size - 1u) >> 2u; word++) {
        merge_word(word, d, (*w).src, size);
    }
}
