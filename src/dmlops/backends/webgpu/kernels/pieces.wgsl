// Shared by every dmlops WebGPU kernel: the piece table, the tile -> piece lookup and a
// walker over a piece's elements.
//
// A dispatch walks `header.tiles` tiles of TILE elements; piece k owns the tiles from
// pieces[k].tile_start on. Offsets and strides are in the kernel's units (Word elements,
// or bytes for bytes.wgsl); strides are i32 bit patterns added with u32 wrap-around, so a
// negative stride walks backwards. Dimension 0 is the innermost. `steps` holds THREADS
// written in the piece's mixed radix (its sizes), so a thread moves from element e to
// e + THREADS with one add and compare per dimension instead of divisions.

const THREADS: u32 = 256u;
// Elements per thread of the element-wise kernels: the backend lowers it for small
// dispatches, so that they still have workgroups enough to fill the GPU.
override PER_THREAD: u32 = 8u;
override TILE: u32 = THREADS * PER_THREAD;
const MAX_DIMS: u32 = 8u;
// Dimensions the walker visits: the pipeline sets it to its pieces' dimension count
// (pieces with fewer are padded with size-1 dimensions), so its loops unroll fully.
override DIMS: u32 = 8u;

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
    steps: array<u32, 8>,
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

// A position in a piece: its index per dimension and its source and destination offsets.
struct Walk {
    index: array<u32, 8>,
    src: u32,
    dst: u32,
}

fn walk_to(p: ptr<function, Piece>, e: u32) -> Walk {
    var w: Walk;
    var rest = e;
    w.src = (*p).src_offset;
    w.dst = (*p).dst_offset;
    for (var i = 0u; i + 1u < DIMS; i++) {
        let n = (*p).sizes[i];
        let c = rest % n;
        rest = rest / n;
        w.index[i] = c;
        w.src += c * (*p).src_strides[i];
        w.dst += c * (*p).dst_strides[i];
    }
    w.index[DIMS - 1u] = rest;
    w.src += rest * (*p).src_strides[DIMS - 1u];
    w.dst += rest * (*p).dst_strides[DIMS - 1u];
    return w;
}

// Move `w` THREADS elements on (past the last element it wraps; callers check the count).
fn walk_on(p: ptr<function, Piece>, w: ptr<function, Walk>) {
    var carry = 0u;
    for (var i = 0u; i < DIMS; i++) {
        let n = (*p).sizes[i];
        let old = (*w).index[i];
        var c = old + (*p).steps[i] + carry;
        carry = 0u;
        if (c >= n) {
            c -= n;
            carry = 1u;
        }
        (*w).index[i] = c;
        (*w).src += (c - old) * (*p).src_strides[i];
        (*w).dst += (c - old) * (*p).dst_strides[i];
    }
}

// Where tile `t` of piece `k` lies for the tiled kernels (transposes): its first index
// along dimensions 0 and 1 (tiles of `ti` x `tj`) and the source and destination offsets
// of its outer index.
struct TileAt {
    i0: u32,
    j0: u32,
    src: u32,
    dst: u32,
}

fn tile_at(k: u32, t: u32, ti: u32, tj: u32) -> TileAt {
    let across = (pieces[k].sizes[0] + ti - 1u) / ti;
    let down = (pieces[k].sizes[1] + tj - 1u) / tj;
    let local = t - pieces[k].tile_start;
    var at: TileAt;
    at.i0 = (local % across) * ti;
    at.j0 = ((local / across) % down) * tj;
    var outer = local / (across * down);
    at.src = pieces[k].src_offset;
    at.dst = pieces[k].dst_offset;
    for (var x = 2u; x < DIMS; x++) {
        let n = pieces[k].sizes[x];
        let c = outer % n;
        outer = outer / n;
        at.src += c * pieces[k].src_strides[x];
        at.dst += c * pieces[k].dst_strides[x];
    }
    return at;
}
