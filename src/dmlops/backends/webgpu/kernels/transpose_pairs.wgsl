// The cells of the tiled transpose (transpose.wgsl) for 2-byte elements: 2 x 2 blocks. A
// block is two source words (rows 2I and 2I + 1, columns 2J and 2J + 1) and, transposed in
// registers, two destination words (rows 2J and 2J + 1, columns 2I and 2I + 1), so every
// load and store is a whole aligned word and no word is shared. Dimensions 0 and 1 count
// blocks; pad0 and pad1 are the block's second source and destination rows, in words on
// from its first.

alias Cell = vec2<u32>;  // the block's two destination words

fn load_cell(k: u32, at: u32) -> Cell {
    let a = load_src(at);  // elements (2I, 2J) low, (2I, 2J + 1) high
    let b = load_src(at + pieces[k].pad0);  // (2I + 1, 2J), (2I + 1, 2J + 1)
    return vec2<u32>(
        (a & 0xffffu) | (b << 16u),  // row 2J: (2J, 2I), (2J, 2I + 1)
        (a >> 16u) | (b & 0xffff0000u),  // row 2J + 1
    );
}

fn store_cell(k: u32, at: u32, cell: Cell) {
    dst[at] = cell.x;
    dst[at + pieces[k].pad1] = cell.y;
}
