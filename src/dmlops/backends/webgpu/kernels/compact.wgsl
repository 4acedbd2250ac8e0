// A stream compaction (compact.py; dmlops.compaction): the coordinates of the nonzero
// elements of a strided box, in ascending element order, and their count, in three passes:
// count_blocks (each workgroup counts the nonzero elements of its block of 1024),
// scan_blocks (one workgroup: each block's first row, and the count) and write_rows (each
// workgroup numbers its block's nonzero elements again and writes their rows). The bindings
// (SOURCE, COORDS, COUNT) are filled in by compact.py: buffers the roles may share.

struct Params {
    count: u32,        // elements in the box
    rank: u32,
    columns: u32,
    blocks: u32,
    src_byte: u32,     // the box's first element (index 0), in bytes from its buffer's start
    element: u32,      // its bytes: 1, 2, 4 or 8
    mask_lo: u32,      // an element is nonzero where (low word & mask_lo) | (high & mask_hi)
    mask_hi: u32,
    count_word: u32,   // where the count goes, in words
    coords_word: u32,  // where row 0's column 0 goes
    row_stride: u32,   // in words
    column_stride: u32,
    grid_x: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
    sizes: array<vec4<u32>, 2>,    // the box's sizes, outermost first
    strides: array<vec4<i32>, 2>,  // its strides, in elements
}

BINDINGS

@group(0) @binding(3) var<storage, read> params: Params;
@group(0) @binding(4) var<storage, read_write> blocks: array<u32>;

const THREADS: u32 = 256u;
const PER_THREAD: u32 = 4u;
const BLOCK: u32 = 1024u;

var<workgroup> partial: array<u32, 256>;

fn size_of(d: u32) -> u32 {
    return params.sizes[d >> 2u][d & 3u];
}

fn byte_of(i: u32) -> u32 {
    var rest = i;
    var at = i32(params.src_byte);
    for (var d = i32(params.rank) - 1; d >= 0; d--) {
        let n = size_of(u32(d));
        let c = rest % n;
        rest = rest / n;
        at = at + i32(c) * params.strides[u32(d) >> 2u][u32(d) & 3u] * i32(params.element);
    }
    return u32(at);
}

fn nonzero(i: u32) -> bool {
    let at = byte_of(i);
    let word = load_src(at >> 2u) >> (8u * (at & 3u));
    var high = 0u;
    if (params.element == 8u) {
        high = load_src((at >> 2u) + 1u);
    }
    return ((word & params.mask_lo) | (high & params.mask_hi)) != 0u;
}

// the workgroup's exclusive prefix of `mine` across its threads, and its total
fn workgroup_prefix(lid: u32, mine: u32) -> vec2<u32> {
    partial[lid] = mine;
    workgroupBarrier();
    for (var step = 1u; step < THREADS; step = step * 2u) {
        var add = 0u;
        if (lid >= step) {
            add = partial[lid - step];
        }
        workgroupBarrier();
        partial[lid] = partial[lid] + add;
        workgroupBarrier();
    }
    let total = partial[THREADS - 1u];
    return vec2<u32>(partial[lid] - mine, total);
}

fn flags(first: u32) -> u32 {
    var bits = 0u;
    for (var k = 0u; k < PER_THREAD; k++) {
        let i = first + k;
        if (i < params.count && nonzero(i)) {
            bits = bits | (1u << k);
        }
    }
    return bits;
}

@compute @workgroup_size(256)
fn count_blocks(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let block = wg.y * params.grid_x + wg.x;  // (uniform across the workgroup)
    let first = block * BLOCK + lid * PER_THREAD;
    let made = workgroup_prefix(lid, countOneBits(flags(first)));
    if (lid == 0u && block < params.blocks) {
        blocks[block] = made.y;
    }
}

@compute @workgroup_size(256)
fn scan_blocks(@builtin(local_invocation_index) lid: u32) {
    let per = (params.blocks + THREADS - 1u) / THREADS;  // blocks a thread sums, in order
    let first = lid * per;
    var sum = 0u;
    for (var k = 0u; k < per; k++) {
        if (first + k < params.blocks) {
            sum = sum + blocks[first + k];
        }
    }
    let made = workgroup_prefix(lid, sum);
    var running = made.x;
    for (var k = 0u; k < per; k++) {
        if (first + k < params.blocks) {
            let n = blocks[first + k];
            blocks[first + k] = running;
            running = running + n;
        }
    }
    if (lid == 0u) {
        store_count(params.count_word, made.y);
    }
}

@compute @workgroup_size(256)
fn write_rows(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let block = wg.y * params.grid_x + wg.x;
    let first = block * BLOCK + lid * PER_THREAD;
    let bits = flags(first);
    let made = workgroup_prefix(lid, countOneBits(bits));
    if (block >= params.blocks) {
        return;
    }
    var row = blocks[block] + made.x;
    for (var k = 0u; k < PER_THREAD; k++) {
        if ((bits & (1u << k)) == 0u) {
            continue;
        }
        var rest = first + k;
        let at = params.coords_word + row * params.row_stride;
        for (var j = 0u; j < params.columns; j++) {  // the last `columns` coordinates
            let column = params.columns - 1u - j;
            var value = 0u;
            if (j < params.rank) {
                let n = size_of(params.rank - 1u - j);
                value = rest % n;
                rest = rest / n;
            }
            store_coord(at + column * params.column_stride, value);
        }
        row = row + 1u;
    }
}
