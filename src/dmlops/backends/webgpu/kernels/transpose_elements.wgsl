// The cells of the tiled transpose (transpose.wgsl) for 4- and 8-byte elements: one
// element, one Word.

alias Cell = Word;

fn load_cell(k: u32, at: u32) -> Cell {
    return load_src(at);
}

fn store_cell(k: u32, at: u32, cell: Cell) {
    dst[at] = cell;
}
