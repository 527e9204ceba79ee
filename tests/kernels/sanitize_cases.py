"""A few configurations, one per code path, run under compute-sanitizer by test_gpu.py. CONVT_SANITIZE_ALGOS (a
comma-separated list of forced algos) runs only those configurations, for a check of one kernel's paths."""

import os

import torch

import kernels


CONFIGS = [  # (N, Cin, Cout, k, hw, stride, padding, output_padding, dilation, groups, dtype[, algo, tf32, env])
    (2, 40, 20, (3, 3), (17, 9), 1, 1, 0, 1, 1, torch.float32),          # CO_T=32, two ci chunks, PX=1
    (4, 16, 40, (3, 3), (40, 40), 1, 1, 0, 1, 1, torch.float32),         # CO_T=32, PX=2
    (4, 16, 16, (3, 3), (40, 40), 1, 1, 0, 1, 1, torch.float16),         # CO_T=16, PX=4
    (4, 8, 8, (4, 4), (40, 40), 2, 1, 1, 1, 1, torch.float16),           # CO_T=8, PX=4
    (2, 6, 12, (3, 3), (4, 6), 5, 1, 4, 2, 1, torch.bfloat16),           # pure-fill phases
    (2, 12, 12, (4, 4), (7, 7), 2, 1, 1, 1, 12, torch.float64, "ffma", True),  # depthwise, CO_T=1
    # rows kernel (1-4 output channels a group): strips cut by the edge, 3 taps, groups, a pure-fill phase
    (1, 56, 1, (9, 9), (21, 19), 3, 4, 2, 1, 1, torch.float32, "rows8", True),
    (2, 12, 6, (4, 3), (7, 9), (2, 1), 1, 1, (1, 2), 3, torch.float16, "rows4", True),
    (2, 6, 3, (3, 3), (5, 6), 5, 1, 4, (1, 2), 1, torch.float32, "rows", False),
    # rows kernel with input channels split over warps (a shared-memory sum): 8 warps, and 4 in double
    (1, 56, 1, (9, 9), (21, 19), 3, 4, 2, 1, 1, torch.float32, "rows8k8", True),
    (3, 37, 3, (4, 4), (9, 7), 2, 1, 1, 1, 1, torch.float64, "rows8k4", True),
    # patch kernel: 9 phases split over 2 warps (18 warps a block, 16 rows a thread) with a channel tail; 4
    # phases split over 4 warps in double (a shared sum), two chunks, a patch cut by the edge; fp16 with
    # pure-fill phases and width dilation
    (1, 56, 1, (9, 9), (21, 45), 3, 4, 2, 1, 1, torch.float32, "patchk2", True),
    (3, 37, 3, (4, 4), (9, 40), 2, 1, 1, 1, 1, torch.float64, "patchk4", True),
    (2, 6, 2, (3, 3), (5, 37), (5, 3), 1, (4, 1), (1, 2), 2, torch.float16, "patch", True),
    (1, 8, 12, (3, 5), (6, 11), (2, 3), (1, 2), (1, 0), (2, 1), 4, torch.float32),  # CO_T=4
    # strip kernel: several column segments, rows off 16-byte boundaries, pure-fill rows and columns, channel tail
    (2, 6, 40, (3, 3), (5, 400), (3, 5), 1, 0, 2, 2, torch.float32, "strip", True),
    (1, 8, 12, (3, 5), (6, 300), (2, 3), (1, 2), (1, 0), (2, 1), 4, torch.float16, "strip32", True),
    # strip kernel: tensor cores on unpadded input channels (16), and its FFMA products (strict fp32)
    (1, 16, 32, (3, 3), (5, 140), 5, 1, 0, 2, 1, torch.bfloat16, "strip", True),
    (1, 16, 24, (3, 5), (6, 200), (2, 3), (1, 2), 0, (2, 1), 2, torch.float32, "strip", False),
    # columns kernel, shuffle (kernel == stride): pixel tiles across images and a channel tail with paired fp16
    # stores; groups and an odd kernel width (one store an output) in TF32; bf16, two column tiles, 128 bytes of k
    (2, 40, 24, (2, 2), (12, 20), 2, 0, 0, 1, 1, torch.float16, "cols", True),
    (1, 36, 8, (3, 1), (8, 10), (3, 1), 0, 0, 1, 2, torch.float32, "cols", True),
    (1, 20, 40, (2, 2), (4, 16), 2, 0, 0, 1, 1, torch.bfloat16, "colsk2", True),
    # columns kernel, gather: 4x4 images eight a tile with a channel tail (fp16); 16x16 on the 256-pixel tile in
    # strict fp32 (3xTF32) with output padding; groups, dilation and the batch ending inside a tile (TF32)
    (9, 40, 24, (4, 4), (4, 4), 2, 1, 0, 1, 1, torch.float16, "cols", True),
    (1, 20, 12, (4, 4), (16, 12), 2, 1, 1, 1, 1, torch.float32, "cols", False),
    (3, 32, 20, (4, 2), (6, 6), (2, 3), (2, 1), (1, 0), (2, 1), 2, torch.float32, "colsk2", True),
    # columns kernel, gather with fewer output channels a block than its tile holds: DCGAN 128->64 one a block in
    # TF32; 4x4 images two a block with a channel tail in bf16
    (1, 128, 64, (4, 4), (16, 16), 2, 1, 0, 1, 1, torch.float32, "colsc1", True),
    (5, 72, 24, (4, 4), (4, 4), 2, 1, 0, 1, 1, torch.bfloat16, "colsc2", True),
    # columns kernel, tiled gather: FSRCNN's 9x9 stride 3 (81 columns, weights by element) on edge-cut tiles in TF32;
    # fp16 (the weights loaded by element) with dilation, groups and a channel tail; DCGAN 64->3 in strict fp32
    (1, 56, 1, (9, 9), (21, 40), 3, 4, 2, 1, 1, torch.float32, "cols", True),
    (2, 36, 6, (5, 3), (19, 24), (2, 3), (2, 1), (1, 0), (2, 1), 2, torch.float16, "cols", True),
    (2, 64, 3, (4, 4), (32, 32), 2, 1, 0, 1, 1, torch.float32, "cols", False),
    # its wgmma form (sm_90a; elsewhere the mma.sync form): several pixel tiles a block with a last one cut by the
    # batch's end, groups and a channel tail in TF32; bf16 with an odd kernel width and three column tiles
    (2, 80, 24, (2, 2), (136, 136), 2, 0, 0, 1, 2, torch.float32, "colsw", True),
    (1, 70, 32, (3, 3), (40, 48), 3, 0, 0, 1, 1, torch.bfloat16, "colsw", True),
    # its stores staged as output rows (2x2, widths a multiple of 64): TF32 in two passes, several tiles a block and a
    # last tile its first warpgroup alone fills, beside a column tile cut by the edge; fp16 with groups
    (3, 72, 40, (2, 2), (95, 64), 2, 0, 0, 1, 1, torch.float32, "colsw", True),
    (2, 96, 64, (2, 2), (16, 128), 2, 0, 0, 1, 2, torch.float16, "colsw", True),
    # cells kernel: FSRCNN's 9x9 stride 3 (two n8 tiles, 16 offsets) on tiles cut by the image's edges in TF32; fp16
    # with groups, width dilation and a chunk tail on one n8 tile; DCGAN 64->3 in strict fp32 (3xTF32); two k-steps a
    # chunk: FSRCNN in strict fp32 and a 6x6 stride-3 layer in bf16, both with a chunk tail
    (1, 56, 1, (9, 9), (21, 40), 3, 4, 2, 1, 1, torch.float32, "cellsk1", True),
    (2, 40, 4, (4, 3), (13, 37), (2, 1), (1, 1), (1, 0), (1, 2), 2, torch.float16, "cellsk1", True),
    (2, 64, 3, (4, 4), (32, 32), 2, 1, 0, 1, 1, torch.float32, "cellsk1", False),
    (1, 56, 1, (9, 9), (21, 40), 3, 4, 2, 1, 1, torch.float32, "cellsk2", False),
    (1, 72, 1, (6, 6), (19, 45), 3, 2, 1, 1, 1, torch.bfloat16, "cellsk2", True),
    # taps kernel: FSRCNN's 9x9 stride 3 in TF32 on strips and segments cut by the image's edges; fp16 with groups, a
    # channel tail, and height dilation that leaves a pure-fill phase
    (1, 56, 1, (9, 9), (21, 40), 3, 4, 2, 1, 1, torch.float32, "taps", True),
    (2, 40, 4, (4, 3), (13, 37), (2, 1), (1, 1), (1, 0), (2, 1), 2, torch.float16, "taps", True),
    # stride 1 with 3 output channels: 18 products, so the second of three m-tiles is cut short and the third empty
    (2, 17, 3, (3, 2), (6, 26), 1, (2, 0), 0, 1, 1, torch.bfloat16, "taps", True),
    # DCGAN's 4x4 stride 2 (2 offsets a axis, known at compile time: slots as registers), 48 products, bf16 on two
    # strips and segments cut by the edges
    (2, 64, 3, (4, 4), (11, 37), 2, 1, 0, 1, 1, torch.bfloat16, "taps", True),
    # stack kernel (sm_90a; elsewhere the fallback): FSRCNN's 9x9 stride 3 in TF32 (3 height offsets stacked, 8
    # k-steps for 56 channels) on three strips and segments cut by the image's edges; DCGAN's 4x4 stride 2 in bf16 on
    # two strips; fp16 with groups, a channel tail (one k-step of the short form) and strides (2, 1)
    (1, 56, 1, (9, 9), (21, 140), 3, 4, 2, 1, 1, torch.float32, "stack", True),
    # ... and its TMA (TF32): 24 narrow images, segments of 5 cell rows: rows 0-2 by TMA at the block's start, rows 3-6
    # through the ring, which wraps
    (24, 56, 1, (9, 9), (20, 72), 3, 4, 2, 1, 1, torch.float32, "stack", True),
    (2, 64, 3, (4, 4), (11, 70), 2, 1, 0, 1, 1, torch.bfloat16, "stack", True),
    (2, 20, 4, (4, 3), (13, 37), (2, 1), (1, 1), (1, 0), 1, 2, torch.float16, "stack", True),
    # dense kernel (stride 1): halos past every edge with dilation, a channel tail, two output-channel tiles (TF32);
    # 16 warps in strict fp32 with groups; fp16 pairs interleaved with a chunk tail; bf16 on 32-channel warps
    (2, 20, 70, (3, 5), (19, 36), 1, (2, 4), 0, (2, 1), 1, torch.float32, "dense4", True),
    (1, 24, 40, (3, 3), (21, 12), 1, 1, 0, 1, 2, torch.float32, "dense4w", False),
    (2, 40, 20, (3, 7), (9, 40), 1, (1, 3), 0, 1, 1, torch.float16, "dense2", True),
    (1, 16, 33, (2, 2), (10, 72), 1, 0, (1, 0), (2, 1), 1, torch.bfloat16, "dense2w", True),
    # wgmma dense kernel (Hopper; elsewhere the dense kernel again): TF32 with a halo past every edge, dilation and two
    # channel tiles; fp16 on four warpgroups with a chunk tail; bf16 on three warpgroups with groups
    (2, 20, 70, (3, 5), (19, 36), 1, (2, 4), 0, (2, 1), 1, torch.float32, "dwg", True),
    (2, 40, 20, (3, 7), (9, 40), 1, (1, 3), 0, 1, 1, torch.float16, "dwg24", True),
    (1, 32, 128, (3, 3), (21, 72), 1, 1, 0, 1, 2, torch.bfloat16, "dwg23", True),
    # its warp-specialized form (v18): more tiles than SMs (blocks walk several, the producer runs into the next;
    # half-type widths a multiple of 8, else the dense kernel runs),
    # TF32 with dilation and two channel tiles; fp16 with a chunk tail; bf16 with groups
    (4, 20, 70, (3, 3), (60, 260), 1, 1, 0, (1, 2), 1, torch.float32, "dws4", True),
    (3, 40, 32, (3, 5), (70, 296), 1, (1, 2), 0, 1, 1, torch.float16, "dws", True),
    (2, 32, 128, (3, 3), (50, 144), 1, 1, 0, 1, 2, torch.bfloat16, "dws23", True),
    # its ping-pong form: the two consumer warpgroups take a block's 4-5 tiles in turn (an odd count leaves the last
    # one to the first warpgroup); TF32 with dilation and two channel tiles, fp16 with a chunk tail
    (4, 20, 70, (3, 3), (60, 260), 1, 1, 0, (1, 2), 1, torch.float32, "dwp4", True),
    (3, 40, 32, (3, 5), (70, 296), 1, (1, 2), 0, 1, 1, torch.float16, "dwp4", True),
    # 3 rows x 88 columns a consumer warpgroup: TF32 ping-pong with dilation, two channel tiles and a column tile
    # cut at the edge (260 + 2 = 3 x 88 - 2); bf16 with a chunk tail and groups
    (4, 20, 70, (3, 3), (60, 260), 1, 1, 0, (1, 2), 1, torch.float32, "dwp3", True),
    (2, 48, 64, (3, 5), (50, 144), 1, (1, 2), 0, 1, 2, torch.bfloat16, "dws3", True),
    # 4 rows x 88 in ping-pong (setmaxnreg): TF32 with dilation, two channel tiles and the same cut column tile; as two
    # warpgroups of one 8-row tile, fp16 with a chunk tail and a row tile cut at the bottom (70 rows)
    (4, 20, 70, (3, 3), (60, 260), 1, 1, 0, (1, 2), 1, torch.float32, "dwp4w", True),
    (3, 40, 32, (3, 5), (70, 296), 1, (1, 2), 0, 1, 1, torch.float16, "dws4w", True),
    # ping-pong with the weights from registers (two register sets, a commit group a tap): fp16 with a chunk tail and
    # an odd tap count, so a chunk ends on either set
    (3, 40, 70, (3, 3), (70, 296), 1, (1, 1), 0, 1, 1, torch.float16, "dwr4", True),
    # with channels as N (v24): TF32 with dilation and three channel tiles (32 a tile) with a tail; bf16 with a chunk
    # tail and an odd output width (stores an element at a time); ping-pong in fp16
    (4, 20, 70, (3, 3), (60, 260), 1, 1, 0, (1, 2), 1, torch.float32, "dwn8", True),
    (3, 40, 24, (3, 4), (70, 296), 1, (1, 1), 0, 1, 1, torch.bfloat16, "dwn8", True),
    (3, 20, 30, (3, 3), (50, 136), 1, 1, 0, 1, 1, torch.float16, "dwnp8", True),
    # the window kernel (v27, kernel rows as N, output rows rolling down a strip): TF32 with width dilation, a channel
    # tail past one chunk and a strip cut at the edge (more tiles than consumer warpgroups); bf16 with groups, a chunk
    # tail and an odd output width; fp16 with a chunk tail, width dilation and a band cut at the bottom
    (4, 20, 30, (3, 3), (60, 260), 1, 1, 0, (1, 2), 1, torch.float32, "dwin", True),
    (3, 40, 24, (3, 4), (70, 296), 1, (1, 1), 0, 1, 2, torch.bfloat16, "dwin", True),
    (3, 40, 24, (3, 5), (70, 296), 1, (1, 2), 0, (1, 2), 1, torch.float16, "dwin", True),
    # TF32 at 15 taps or more (v52: raw rows by TMA, the direct epilogue on 32 output channels): two groups, a channel
    # tail past one chunk (the box's zero rows), a strip cut at the edge (paired stores there)
    (2, 40, 64, (3, 5), (40, 200), 1, (1, 2), 0, 1, 2, torch.float32, "dwin", True),
    # the window kernel's full strips alone and the edge kernel on the rest: the first TF32 window config (262
    # columns: 6 past four strips); fp16 with groups and a 41-column edge (eleven of the edge kernel's 4-column pieces)
    (4, 20, 30, (3, 3), (60, 260), 1, 1, 0, (1, 2), 1, torch.float32, "dwin", True, {"CONVT_DWIN_SPLIT": "1"}),
    (3, 40, 24, (3, 4), (70, 296), 1, (1, 1), 0, 1, 2, torch.float16, "dwin", True, {"CONVT_DWIN_SPLIT": "1"}),
    # tensor-core kernel: each tile, each mma type, a padded channel tail, pure-fill phases
    (2, 20, 40, (3, 3), (9, 13), 1, 1, 0, 1, 1, torch.float32, "tc32", True),       # TF32
    (2, 20, 40, (3, 3), (9, 13), 1, 1, 0, 1, 1, torch.float32, "tc64", False),      # 3xTF32
    (1, 34, 130, (4, 4), (7, 5), 2, 1, 1, 1, 1, torch.float16, "tc128", True),      # fp16
    (2, 6, 12, (3, 3), (4, 6), 5, 1, 4, 2, 1, torch.bfloat16, "tc64", True),        # bf16, pure fill
    # wgmma kernel (Hopper; elsewhere these run the mma.sync path again): each
    # operand type, 64- and 128-byte rows, a multi-image box, pure-fill phases
    (2, 20, 40, (3, 3), (9, 13), 1, 1, 0, 1, 1, torch.float32, "wg64", True),       # TF32, 128 B rows
    (3, 40, 130, (4, 4), (7, 5), 2, 1, 1, 1, 1, torch.float16, "wg128t", True),     # fp16, 2 co tiles
    (2, 6, 40, (3, 3), (4, 6), 5, 1, 4, 2, 1, torch.bfloat16, "wg32", True),        # bf16, 64 B rows, fill
    # halo kernel (Hopper, TF32): two chunks with a tail, 2 co tiles, groups with pure-fill phases
    (2, 40, 20, (3, 3), (9, 132), 1, 1, 0, 1, 1, torch.float32, "wgh32", True),
    (1, 64, 70, (4, 4), (7, 100), 2, 1, 1, 1, 1, torch.float32, "wgh128", True),
    (2, 68, 40, (3, 3), (8, 96), 5, 1, 4, 2, 2, torch.float32, "wgh64s", True),
]

ONLY = [a for a in os.environ.get("CONVT_SANITIZE_ALGOS", "").split(",") if a]
ENV_KEYS = {key for c in CONFIGS if len(c) > 13 for key in c[13]}  # a config's env holds only for it

for n, cin, cout, k, hw, s, p, op, d, g, dt, *path in CONFIGS:
    algo, tf32, env = (*path, {})[:3] if path else ("auto", True, {})
    if ONLY and algo not in ONLY:
        continue
    for key in ENV_KEYS:
        os.environ.pop(key, None)
    os.environ.update(env)
    os.environ["CONVT_CUDA_ALGO"] = algo
    torch.backends.cudnn.allow_tf32 = tf32
    x = torch.randn(n, cin, *hw, device="cuda", dtype=dt)
    w = torch.randn(cin, cout // g, *k, device="cuda", dtype=dt)
    b = torch.randn(cout, device="cuda", dtype=dt)
    y = kernels.conv_transpose2d(x, w, b, s, p, op, g, d)
    if algo.startswith("dw") and torch.cuda.get_device_capability() == (9, 0):
        # the wgmma dense kernel's tiles (or the window kernel) run here, not their fallback (the dense kernel)
        two = lambda v: (v, v) if isinstance(v, int) else v  # noqa: E731
        path = torch.ops.convt.cuda_path(x, w, two(s), two(p), two(op), g, two(d))
        assert path == ("dwin" if algo == "dwin" else "dwg"), (algo, path, n, cin, cout, k, hw)
    ref = torch.nn.functional.conv_transpose2d(x.double(), w.double(), b.double(), s, p, op, g, d)
    err = float((y.double() - ref).norm() / ref.norm())
    assert err < 1e-2, (n, cin, cout, k, err)
torch.cuda.synchronize()
print("sanitize cases ok")
