// Tiled transpose of 2-byte elements in 2 x 2 blocks: a block is two source words (rows 2I
// and 2I + 1, columns 2J and 2J + 1) and, transposed in registers, two destination words
// (rows 2J and 2J + 1, columns 2I and 2I + 1), so every load and store is a whole aligned
// word and no word is shared: the 4-byte transpose's tiling (transpose.wgsl) over blocks.
// A piece's dimension 0 is the destination's unit-stride axis and dimension 1 the
// source's, both in blocks; offsets and strides are in words; pad0 and pad1 are the
// block's second source and destination rows, in words on from its first. The backend
// prepends `alias Word = u32`, the bindings and `load_src`, then pieces.wgsl.

const TI: u32 = 32u;
const TJ: u32 = 32u;

var<workgroup> tile: array<array<vec2<u32>, TJ + 1u>, TI>;  // [i][j]: a block's output words

@compute @workgroup_size(32, 8)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let t = wg.y * header.grid_x + wg.x;
    if (t >= header.tiles) {
        return;
    }
    let k = find_piece(t);
    let ni = pieces[k].sizes[0];
    let nj = pieces[k].sizes[1];
    let at = tile_at(k, t, TI, TJ);
    let si = pieces[k].src_strides[0];
    let sj = pieces[k].src_strides[1];
    let di = pieces[k].dst_strides[0];
    let dj = pieces[k].dst_strides[1];
    let src_row = pieces[k].pad0;
    let dst_row = pieces[k].pad1;
    for (var r = 0u; r < TI; r += 8u) {
        for (var c = 0u; c < TJ; c += 32u) {
            let i = at.i0 + lid.y + r;
            let j = at.j0 + lid.x + c;
            if (i < ni && j < nj) {
                let s = at.src + i * si + j * sj;
                let a = load_src(s);  // elements (2I, 2J) low, (2I, 2J + 1) high
                let b = load_src(s + src_row);  // (2I + 1, 2J), (2I + 1, 2J + 1)
                tile[lid.y + r][lid.x + c] = vec2<u32>(
                    (a & 0xffffu) | (b << 16u),  // row 2J: (2J, 2I), (2J, 2I + 1)
                    (a >> 16u) | (b & 0xffff0000u),  // row 2J + 1
                );
            }
        }
    }
    workgroupBarrier();
    for (var r = 0u; r < TJ; r += 8u) {
        for (var c = 0u; c < TI; c += 32u) {
            let j = at.j0 + lid.y + r;
            let i = at.i0 + lid.x + c;
            if (i < ni && j < nj) {
                let words = tile[lid.x + c][lid.y + r];
                let d = at.dst + i * di + j * dj;
                dst[d] = words.x;
                dst[d + dst_row] = words.y;
            }
        }
    }
}
