// Indexed copies (gather / scatter): what every indexed kernel shares (reading an index,
// locating a row, the winner passes of a scatter whose targets may meet). The entry points
// that move data follow it: indexed_elements.wgsl (one element per invocation, any element
// size and alignment, words merged through merge.wgsl) and indexed_rows.wgsl (whole-word
// rows, a workgroup per 1024 words of a row, plain stores). The backend prepends the
// bindings (`dst`, `load_src`, `load_idx`, `info`, `winner`). info (i32):
//   [0] rank  [1] axes  [2] row length  [3] element bytes  [4] scatter  [5] index type
//   (0 i32, 1 i64, 2 u32, 3 u64)  [6] negative indices  [7] skip out-of-range
//   [8] tuple stride (index elements)  [9] src byte offset  [10] dst byte offset
//   [11] index byte offset  [12] row src stride  [13] row dst stride  [14] rows
//   [15] winner slots (0: none)  [16] grid x (workgroups)
//   [17] reversing dimension (REVERSE_SUBSEQUENCES; -1: none)
//   [18] 1 where the copy frees each slot it wins (one invocation, or one team's first,
//   decides for the whole row), so no pass clears the table before the next call
//   [19 + 6d ..] shape, src, dst, index, slot, order stride of outer dimension d
//   then per axis: size, stride, slot stride
// Gathers clamp an index into its axis; scatters drop a row out of range, and a row whose
// slot a row later in index order also writes (winner holds, per slot, 1 + the latest order
// that writes it; 0 is a free slot, as a new buffer is).

struct Row {
    ok: bool,
    src: i32,  // elements
    dst: i32,
    slot: i32,
    order: i32,
}

fn read_index(at: i32) -> vec2<i32> {  // (value, 1 if it cannot be an index)
    let kind = info[5];
    let base = u32(info[11]) / 4u;
    if (kind == 0) {
        return vec2<i32>(bitcast<i32>(load_idx(base + u32(at))), 0);
    }
    if (kind == 2) {
        let v = load_idx(base + u32(at));
        return vec2<i32>(i32(v & 0x7fffffffu), select(0, 1, v >= 0x80000000u));
    }
    let lo = load_idx(base + 2u * u32(at));
    let hi = load_idx(base + 2u * u32(at) + 1u);
    if (kind == 1) {
        let small = (hi == 0u && lo < 0x80000000u) || (hi == 0xffffffffu && lo >= 0x80000000u);
        let far = select(2147483647, -2147483647 - 1, hi >= 0x80000000u);  // its sign
        return vec2<i32>(select(far, bitcast<i32>(lo), small), select(1, 0, small));
    }
    return vec2<i32>(i32(lo & 0x7fffffffu), select(1, 0, hi == 0u && lo < 0x80000000u));
}

fn locate(row: i32) -> Row {
    var r: Row;
    let rank = info[0];
    var m = row;
    var s = 0;
    var d = 0;
    var x = 0;
    var l = 0;
    var o = 0;
    var p = 0;
    let reverse = info[17];
    for (var k = rank - 1; k >= 0; k--) {
        let at = 19 + 6 * k;
        let n = info[at];
        let c = m % n;
        m = m / n;
        if (k == reverse) {
            p = c;
        }
        s += c * info[at + 1];
        d += c * info[at + 2];
        x += c * info[at + 3];
        l += c * info[at + 4];
        o += c * info[at + 5];
    }
    let axes_at = 19 + 6 * rank;
    var moved = 0;
    r.ok = true;
    for (var t = 0; t < info[1]; t++) {
        let size = info[axes_at + 3 * t];
        let read = read_index(x + t * info[8]);
        var k = read.x;
        if (reverse >= 0) {  // a length L, clamped into [0, size]: p < L reads L - 1 - p
            // (one that is no index: past the axis, or, read from 64 bits, below -2**31)
            let length = select(clamp(k, 0, size), select(size, 0, k < 0), read.y != 0);
            k = select(p, length - 1 - p, p < length);
            moved += k * info[axes_at + 3 * t + 1];
            continue;
        }
        var huge = read.y != 0;
        if (info[7] == 2) {  // clamped into [-size, size - 1] first (WebNN)
            huge = false;
            if (k >= size || (read.y != 0 && k >= 0)) {
                k = size - 1;
            } else if (k < -size) {
                k = -size;
            }
        }
        if (info[6] != 0 && !huge && k < 0) {
            k += size;
        }
        if (huge || k < 0 || k >= size) {
            if (info[4] != 0) {
                r.ok = false;
                return r;
            }
            k = select(0, size - 1, huge || k >= size);
        }
        moved += k * info[axes_at + 3 * t + 1];
        l += k * info[axes_at + 3 * t + 2];
    }
    if (info[4] != 0) { d += moved; } else { s += moved; }
    r.src = s;
    r.dst = d;
    r.slot = l;
    r.order = o;
    return r;
}

fn item_of(wg: vec3<u32>, lid: u32) -> i32 {
    return i32((wg.y * u32(info[16]) + wg.x) * 256u + lid);
}

@compute @workgroup_size(256)
fn clear(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = item_of(wg, lid);
    if (i < info[15]) {
        atomicStore(&winner[i], 0);
    }
}

@compute @workgroup_size(256)
fn elect(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = item_of(wg, lid);
    if (i >= info[14]) {
        return;
    }
    let r = locate(i);
    if (r.ok) {
        atomicMax(&winner[r.slot], r.order + 1);
    }
}
