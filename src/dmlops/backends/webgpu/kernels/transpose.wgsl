// Tiled transpose: copies whose source and destination unit-stride axes differ (slices of
// transposed or permuted views). A piece's dimension 0 is the destination's unit-stride
// axis, dimension 1 the source's; a workgroup moves one TI x TJ tile of cells (TI along
// dimension 0; both multiples of 32, set by the backend) for one index of the outer
// dimensions: it reads rows along dimension 1 (contiguous in the source) into workgroup
// memory, then writes rows along dimension 0 (contiguous in the destination).
// A cell is one element of 4 or 8 bytes (`Cell` = `Word`, u32 or vec2<u32>) or, for 2-byte
// elements, a 2 x 2 block (transpose_pairs.wgsl); offsets and strides are in Words. The
// backend prepends `alias Word`, the bindings and `load_src`, pieces.wgsl, then `Cell`,
// `load_cell` and `store_cell` (below for single elements).

const TI: u32 = 32u;
const TJ: u32 = 32u;
// invocation rows of the 32-wide workgroup, a divisor of TI and TJ (set by the backend: 8,
// or 16 for 2-byte cells where the device allows 512 invocations)
override ROWS: u32 = 8u;

var<workgroup> tile: array<array<Cell, TJ + 1u>, TI>;

@compute @workgroup_size(32, ROWS)
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
    for (var r = 0u; r < TI; r += ROWS) {
        for (var c = 0u; c < TJ; c += 32u) {
            let i = at.i0 + lid.y + r;
            let j = at.j0 + lid.x + c;
            if (i < ni && j < nj) {
                tile[lid.y + r][lid.x + c] = load_cell(k, at.src + i * si + j * sj);
            }
        }
    }
    workgroupBarrier();
    for (var r = 0u; r < TJ; r += ROWS) {
        for (var c = 0u; c < TI; c += 32u) {
            let j = at.j0 + lid.y + r;
            let i = at.i0 + lid.x + c;
            if (i < ni && j < nj) {
                store_cell(k, at.dst + i * di + j * dj, tile[lid.x + c][lid.y + r]);
            }
        }
    }
}
