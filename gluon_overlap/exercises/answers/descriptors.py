"""Notebook 03, exercise "descriptors": the five TMA descriptors of a step kernel, on the host."""
import triton.experimental.gluon.language as gl
from triton.experimental.gluon.nvidia.blackwell import TensorDescriptor


def make_descriptors(a_data, b_data, a_scale_swizzled, b_scale_swizzled, c, plan):
    a_fp4 = plan.a_format != "mxfp8"  # two e2m1 elements a byte
    b_fp4 = plan.b_format != "mxfp8"
    mixed = a_fp4 != b_fp4  # an fp4 operand beside an fp8 one is loaded padded, one element a byte
    split_m = [[1, 0]]  # the CGA layout: the pair's first dimension is split over the two CTAs
    a_block = [256, plan.block_k // 2 if a_fp4 else plan.block_k]
    b_block = [plan.block_n, plan.block_k // 2 if b_fp4 else plan.block_k]
    a_layout = gl.NVMMASharedLayout.get_default_for(a_block, gl.uint8 if a_fp4 else gl.float8e4nv,
                                                    fp4_padded=mixed and a_fp4, cga_layout=split_m)
    b_layout = gl.NVMMASharedLayout.get_default_for(b_block, gl.uint8 if b_fp4 else gl.float8e4nv,
                                                    fp4_padded=mixed and b_fp4, cga_layout=split_m)
    c_block = [256, plan.epilogue_block_n]
    c_layout = gl.NVMMASharedLayout.get_default_for(c_block, gl.float16, cga_layout=split_m)
    # Scales: packed 512-byte chunks, moved as they are (no swizzle); A's chunk dimension split, B's whole.
    rep_k = plan.block_k // (plan.vec_size * 4)
    a_scale_layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=8, rank=5,
                                          cga_layout=[[0, 1, 0, 0, 0]])
    b_scale_layout = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=8, rank=5,
                                          cga_layout=[[0, 0, 0, 0, 0]])
    a_scale_5d = a_scale_swizzled.reshape(1, a_scale_swizzled.shape[0], a_scale_swizzled.shape[1], 2, 256)
    b_scale_5d = b_scale_swizzled.reshape(1, b_scale_swizzled.shape[0], b_scale_swizzled.shape[1], 2, 256)
    return (TensorDescriptor.from_tensor(a_data, a_block, a_layout),
            TensorDescriptor.from_tensor(b_data, b_block, b_layout),
            TensorDescriptor.from_tensor(c, c_block, c_layout),
            TensorDescriptor.from_tensor(a_scale_5d, [1, 2, rep_k, 2, 256], a_scale_layout),
            TensorDescriptor.from_tensor(b_scale_5d, [1, plan.block_n // 128, rep_k, 2, 256], b_scale_layout))
