// Shared by every dmlops WebGPU kernel: the piece table and the tile -> piece lookup.
//
// A dispatch walks `header.tiles` tiles of TILE elements; piece k owns the tiles from
// pieces[k].tile_start on. Offsets and strides are in the kernel's units (Word elements,
// or bytes for bytes.wgsl); strides are i32 bit patterns added with u32 wrap-around, so a
// negative stride walks backwards. Dimension 0 is the innermost.

const THREADS: u32 = 256u;
const PER_THREAD: u32 = 4u;
const TILE: u32 = 1024u;  // THREADS * PER_THREAD
const MAX_DIMS: u32 = 8u;

struct Piece {
    tile_start: u32,
    count: u32,
    ndim: u32,
    src_offset: u32,
    dst_offset: u32,
    element_bytes: u32,
    pad0: u32,
    pad1: u32,
    sizes: array<u32, 8>,
    src_strides: array<u32, 8>,
    dst_strides: array<u32, 8>,
}

struct Header {
    pieces: u32,
    tiles: u32,
    grid_x: u32,
    pad: u32,
}

@group(0) @binding(2) var<storage, read> pieces: array<Piece>;
@group(0) @binding(3) var<uniform> header: Header;

// The piece owning `tile`: the last one whose tile_start is at most `tile`.
fn find_piece(tile: u32) -> u32 {
    var lo = 0u;
    var hi = header.pieces - 1u;
    while (lo < hi) {
        let mid = (lo + hi + 1u) / 2u;
        if (pieces[mid].tile_start <= tile) {
            lo = mid;
        } else {
            hi = mid - 1u;
        }
    }
    return lo;
}

// (source, destination) offsets of element `e` of piece `k`.
fn locate(k: u32, e: u32) -> vec2<u32> {
    var rest = e;
    var s = pieces[k].src_offset;
    var d = pieces[k].dst_offset;
    let ndim = pieces[k].ndim;
    for (var i = 0u; i < ndim; i++) {
        let n = pieces[k].sizes[i];
        let c = rest % n;
        rest = rest / n;
        s += c * pieces[k].src_strides[i];
        d += c * pieces[k].dst_strides[i];
    }
    return vec2<u32>(s, d);
}
