// Rows of whole units at unit-aligned starts (the backend checks), moved with plain loads
// and stores; the first invocation moving a row locates it (and, for a scatter whose
// targets may meet, whether it wins its slot). A unit is a 4-byte word or, where every row
// start and length is a multiple of 16 bytes, a 16-byte vector: the backend prepends
// `alias Unit`, `UNIT_BYTES`, `dst: array<Unit>` and `load_src`. info[16] is the grid's x
// size in workgroups.
// - `segments`: rows of 256 units or more, a team of 32 invocations per segment of at most
//   256 units of a row (eight segments a workgroup), each invocation loading its units of
//   the segment before it stores any;
// - `teams`: shorter rows, a team of invocations per row (the power of two at or above its
//   unit count, at least 4), 256 / team rows a workgroup.

// Where row `m` moves from and to, in units: (source, destination), the source -1 where it
// does not move (no such row, an index out of range, or a later row wins its slot); the
// winning row's slot is freed where info[18] says the row has no other mover.
fn placed(m: i32) -> vec2<i32> {
    if (m >= info[14]) {
        return vec2<i32>(-1, 0);
    }
    let r = locate(m);
    if (!r.ok || (info[15] > 0 && atomicLoad(&winner[r.slot]) != r.order + 1)) {
        return vec2<i32>(-1, 0);
    }
    if (info[15] > 0 && info[18] != 0) {
        atomicStore(&winner[r.slot], 0);
    }
    return vec2<i32>(info[9] + r.src * info[3], info[10] + r.dst * info[3]) / UNIT_BYTES;
}

var<workgroup> team_at: array<vec2<i32>, 64>;  // placed(each team's row)

@compute @workgroup_size(256)
fn teams(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let group = i32(wg.y * u32(info[16]) + wg.x);
    let words = info[2] * info[3] / UNIT_BYTES;  // (units)
    // invocations a row: the power of two at or above its units, 4 to 256 (indexed.py:
    // _team_lanes)
    let lanes = max(4, 1 << (32u - countLeadingZeros(u32(words - 1))));
    let team = i32(lid) / lanes;
    let lane = i32(lid) - team * lanes;
    if (lane == 0) {
        team_at[team] = placed(group * (256 / lanes) + team);
    }
    workgroupBarrier();
    let at = team_at[team];
    if (at.x >= 0 && lane < words) {
        dst[u32(at.y + lane)] = load_src(u32(at.x + lane));
    }
}

const SEGMENT_UNITS: i32 = 256;  // a segment's units at most: eight an invocation of 32
var<workgroup> segment_at: array<vec2<i32>, 8>;  // placed(each team's row)

@compute @workgroup_size(256)
fn segments(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let group = i32(wg.y * u32(info[16]) + wg.x);
    let words = info[2] * info[3] / UNIT_BYTES;  // (units)
    let per_row = (words + SEGMENT_UNITS - 1) / SEGMENT_UNITS;
    let team = i32(lid) / 32;
    let lane = i32(lid) - team * 32;
    let work = group * 8 + team;
    let m = work / per_row;
    if (lane == 0) {
        segment_at[team] = placed(m);
    }
    workgroupBarrier();
    let at = segment_at[team];
    if (at.x < 0) {
        return;
    }
    let first = (work - m * per_row) * SEGMENT_UNITS + lane;
    let end = min(words, first - lane + SEGMENT_UNITS);
    var moved: array<Unit, 8>;
    for (var j = 0; j < 8; j++) {
        let w = first + j * 32;
        if (w < end) {
            moved[j] = load_src(u32(at.x + w));
        }
    }
    for (var j = 0; j < 8; j++) {
        let w = first + j * 32;
        if (w < end) {
            dst[u32(at.y + w)] = moved[j];
        }
    }
}
