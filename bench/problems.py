"""The seven KernelBench level-1 ConvTranspose2d problems (current sizes), as data.

Shared by the GPU tests and the benchmark; the table is ../shared/reference/kernelbench-convtranspose2d.md.
"""

# id: (N, Cin, Cout, (kH, kW), (H, W), stride, padding, output_padding, dilation, groups)
PROBLEMS = {
    57: (8, 64, 64, (3, 3), (1024, 1024), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    65: (8, 64, 64, (3, 7), (512, 512), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    69: (64, 64, 128, (3, 5), (128, 256), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    71: (8, 32, 32, (3, 3), (512, 1024), (1, 1), (0, 0), (0, 0), (1, 1), 1),
    75: (16, 32, 64, (3, 5), (128, 256), (2, 3), (1, 2), (0, 0), (2, 1), 4),
    78: (8, 32, 32, (3, 7), (512, 1024), (1, 1), (1, 3), (0, 0), (1, 1), 1),
    81: (16, 32, 64, (3, 3), (64, 128), (5, 5), (1, 1), (0, 0), (2, 2), 1),
}

# Layers from real decoders (../shared reference table): name -> the same tuple.
DECODER_LAYERS = {
    "dcgan-512-256-n64": (64, 512, 256, (4, 4), (4, 4), (2, 2), (1, 1), (0, 0), (1, 1), 1),
    "dcgan-64-3-n64": (64, 64, 3, (4, 4), (32, 32), (2, 2), (1, 1), (0, 0), (1, 1), 1),
    "dcgan-128-64-n1": (1, 128, 64, (4, 4), (16, 16), (2, 2), (1, 1), (0, 0), (1, 1), 1),
    "unet-512-256-n8": (8, 512, 256, (2, 2), (64, 64), (2, 2), (0, 0), (0, 0), (1, 1), 1),
    "unet-128-64-n1": (1, 128, 64, (2, 2), (256, 256), (2, 2), (0, 0), (0, 0), (1, 1), 1),
    "fsrcnn-56-1-n1": (1, 56, 1, (9, 9), (256, 256), (3, 3), (4, 4), (2, 2), (1, 1), 1),
    "depthwise-256-n16": (16, 256, 256, (4, 4), (64, 64), (2, 2), (1, 1), (0, 0), (1, 1), 256),
}

# The KernelBench problems under the case names the benchmark tables use (kb57, ...).
KERNELBENCH_CASES = {f"kb{pid}": shape for pid, shape in PROBLEMS.items()}
