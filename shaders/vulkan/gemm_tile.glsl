// The tiled-GEMM core shared by gemm.comp and conv.comp (implicit GEMM).
//
// A work group computes a TM x TN tile of C = A * B, with TM = 4 * local_size_y
// and TN = 4 * local_size_x (both 16, 32 or 64, chosen per dispatch). Each
// invocation (tx, ty) accumulates a 4x4 register block at rows ty + i * LY
// and columns tx + j * LX: strided so that reads of the shared B slice are
// consecutive across tx (no bank conflicts) and reads of the A slice are
// broadcasts, and so that the final stores are coalesced along rows of C.
// The K loop stages TK-deep slices of A (As[k][m]) and B (Bs[k][n]) in
// shared memory; the including shader fills them (zeros outside the
// matrices) between the two barriers of each step. Rows of As/Bs are
// padded by one float so that k-fastest fills do not hit one bank.
#define TK 16u
#define LX gl_WorkGroupSize.x
#define LY gl_WorkGroupSize.y
#define TM (4u * LY)
#define TN (4u * LX)
#define NT (LX * LY)
#define TILE_MAX 64u
#define AS_STRIDE (TM + 1u)
#define BS_STRIDE (TN + 1u)

shared float As[TK * (TILE_MAX + 1u)];
shared float Bs[TK * (TILE_MAX + 1u)];

// acc += As * Bs over one TK slice.
void MultiplyTile(inout float acc[4][4]) {
  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  [[unroll]] for (uint k = 0u; k < TK; ++k) {
    float a[4], b[4];
    [[unroll]] for (uint i = 0u; i < 4u; ++i) a[i] = As[k * AS_STRIDE + ty + i * LY];
    [[unroll]] for (uint j = 0u; j < 4u; ++j) b[j] = Bs[k * BS_STRIDE + tx + j * LX];
    [[unroll]] for (uint i = 0u; i < 4u; ++i)
      [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] += a[i] * b[j];
  }
}

// The work group's tile, counted over x then y (1-D dispatches fold their
// group count into y past the device's x limit).
uint TileIndex() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }
