// Rows of whole 4-byte words at word-aligned starts (the backend checks), moved with plain
// loads and stores; the first invocation moving a row locates it (and, for a scatter whose
// targets may meet, whether it wins its slot). `dst` is array<u32>. info[16] is the grid's
// x size in workgroups.
// - `rows`: rows of 256 words or more, a workgroup per 1024 words of a row;
// - `teams`: shorter rows (4 words or more), a team of invocations per row (the power of
//   two at or above its word count), 256 / team rows a workgroup.

const ROW_WORDS_PER_GROUP: i32 = 1024;

var<workgroup> row_at: vec3<i32>;  // (moves: 1 or 0, source word, destination word)

@compute @workgroup_size(256)
fn rows(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let group = i32(wg.y * u32(info[16]) + wg.x);
    let words = info[2] * info[3] / 4;
    let chunks = (words + ROW_WORDS_PER_GROUP - 1) / ROW_WORDS_PER_GROUP;
    let m = group / chunks;
    if (lid == 0u) {
        var moves = 0;
        var s = 0;
        var d = 0;
        if (m < info[14]) {
            let r = locate(m);
            let wins = info[15] == 0 || atomicLoad(&winner[r.slot]) == r.order + 1;
            moves = select(0, 1, r.ok && wins);
            if (moves == 1 && info[15] > 0 && info[18] != 0) {  // (the row's only workgroup)
                atomicStore(&winner[r.slot], 0);
            }
            s = (info[9] + r.src * info[3]) / 4;
            d = (info[10] + r.dst * info[3]) / 4;
        }
        row_at = vec3<i32>(moves, s, d);
    }
    let at = workgroupUniformLoad(&row_at);
    if (at.x == 0) {
        return;
    }
    let first = (group - m * chunks) * ROW_WORDS_PER_GROUP;
    for (var j = 0; j < 4; j++) {
        let w = first + j * 256 + i32(lid);
        if (w < words) {
            dst[u32(at.z + w)] = load_src(u32(at.y + w));
        }
    }
}

// per team: (source word, destination word), the source -1 where the row does not move
var<workgroup> team_at: array<vec2<i32>, 64>;

@compute @workgroup_size(256)
fn teams(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let group = i32(wg.y * u32(info[16]) + wg.x);
    let words = info[2] * info[3] / 4;
    // invocations a row: the power of two at or above its words, 4 to 128 (indexed.py:
    // _team_lanes)
    let lanes = max(4, 1 << (32u - countLeadingZeros(u32(words - 1))));
    let team = i32(lid) / lanes;
    let lane = i32(lid) - team * lanes;
    let m = group * (256 / lanes) + team;
    if (lane == 0) {
        var at = vec2<i32>(-1, 0);
        if (m < info[14]) {
            let r = locate(m);
            let wins = info[15] == 0 || atomicLoad(&winner[r.slot]) == r.order + 1;
            if (r.ok && wins) {
                if (info[15] > 0 && info[18] != 0) {  // (the row's only team)
                    atomicStore(&winner[r.slot], 0);
                }
                at = vec2<i32>(info[9] + r.src * info[3], info[10] + r.dst * info[3]) / 4;
            }
        }
        team_at[team] = at;
    }
    workgroupBarrier();
    let at = team_at[team];
    if (at.x >= 0 && lane < words) {
        dst[u32(at.y + lane)] = load_src(u32(at.x + lane));
    }
}
