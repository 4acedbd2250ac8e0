// Every R-th element of a row (a slice with an inner stride of +-2, +-3 or +-4), written
// whole 16-byte vectors (or, the pickw kernels, whole 4-byte words: `Word` is then u32 and
// "vector" below reads "word"): an invocation reads the R source vectors that hold one
// destination vector's elements and picks them out in registers (no atomics, no partial
// words). The elements picked are those P elements into each group of R (the phase of the
// row's start); a backwards row reads its groups from the highest down and puts each
// vector's elements back in order with reorder.wgsl. Rows are whole destination vectors at
// 16-byte aligned offsets; units are vectors: dimension 0 steps the source by R vectors
// (-R backwards) and the destination by one. The backend prepends `alias Word =
// vec4<u32>`, the `src`/`dst` bindings, `load_src` and reorder.wgsl, then pieces.wgsl and
// elements.wgsl (whose entry point calls copy_at), and writes the body below for the
// element size, R, P and direction (webgpu/pick.py): its loads, then each destination
// word as the source lanes, shifts and masks that make it, all constants.

fn copy_at(p: ptr<function, Piece>, w: ptr<function, Walk>) {
    let s = (*w).src;
    PICK_BODY
}
