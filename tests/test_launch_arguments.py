"""Kernel.launch's arguments: arrays of any layout and byte order, aliasing, scalars, dimensions and load()."""
from pathlib import Path

import numpy as np
import pytest

import emulator
from emulator.errors import LaunchError, UsageError
from emulator.runtime.module import Device

ROOT = Path(__file__).resolve().parents[1]

SCALE_PTX = (Path(__file__).parent / "kernels" / "scale.ptx").read_text()

COEF_PTX = """.version 8.0
.target sm_90
.address_size 64
.const .align 4 .f32 coef[4];
.visible .entry copy_coef(.param .u64 out)
{
	.reg .u32 %r<2>;
	.reg .u64 %rd<5>;
	.reg .f32 %f<2>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	mov.u64 %rd3, coef;
	add.u64 %rd3, %rd3, %rd2;
	ld.const.f32 %f1, [%rd3];
	add.u64 %rd4, %rd1, %rd2;
	st.global.f32 [%rd4], %f1;
	ret;
}
"""


@pytest.fixture(scope="module")
def vecadd():
    return emulator.load(ROOT / "examples" / "vecadd" / "vecadd.ptx").kernel("vecadd")


@pytest.fixture(scope="module")
def scale():
    return emulator.load(SCALE_PTX).kernel("scale")


A = np.arange(8, dtype=np.float32)
B = np.full(8, 10, dtype=np.float32)


def one_line(error) -> str:
    text = str(error.value)
    assert "\n" not in text
    return text


# ---- layouts ----
@pytest.mark.parametrize("make_output", [
    lambda: np.zeros((2, 4), np.float32, order="F"),
    lambda: np.zeros((4, 2), np.float32).T,
    lambda: np.zeros(16, np.float32)[::2],
    lambda: np.zeros(8, np.float32)[::-1],
], ids=["fortran", "transposed", "strided", "reversed"])
def test_non_contiguous_output_is_written_back_in_its_own_layout(vecadd, make_output):
    out = make_output()
    vecadd.launch(1, 32, [A, B, out, np.int32(8)])
    # the device buffer holds the elements in C order: element k of the output is a[k] + b[k]
    assert np.array_equal(out.reshape(-1), A + B)


def test_strided_output_leaves_the_elements_between_untouched(vecadd):
    base = np.full(16, -1, np.float32)
    vecadd.launch(1, 32, [A, B, base[::2], np.int32(8)])
    assert np.array_equal(base[::2], A + B)
    assert np.all(base[1::2] == -1)


def test_non_contiguous_input_is_copied_in_element_order(vecadd):
    a = np.asfortranarray(A.reshape(2, 4))
    out = np.zeros(8, np.float32)
    vecadd.launch(1, 32, [a, B, out, np.int32(8)])
    assert np.array_equal(out, a.reshape(-1) + B)


def test_read_only_output_is_left_unwritten(vecadd):
    out = np.zeros(8, np.float32)
    out.flags.writeable = False
    vecadd.launch(1, 32, [A, B, out, np.int32(8)])
    assert np.all(out == 0)


# ---- byte order ----
def test_big_endian_arrays_are_converted_in_and_written_back_big_endian(vecadd):
    a = A.astype(">f4")
    out = np.zeros(8, ">f4")
    vecadd.launch(1, 32, [a, B, out, np.int32(8)])
    assert out.dtype == np.dtype(">f4")
    assert np.array_equal(out, A + B)


def test_set_symbol_converts_a_big_endian_array():
    module = emulator.load(COEF_PTX)
    module.set_symbol("coef", np.array([1.5, 2.5, 3.5, 4.5], ">f4"))
    out = np.zeros(4, np.float32)
    module.kernel("copy_coef").launch(1, 4, [out])
    assert np.array_equal(out, [1.5, 2.5, 3.5, 4.5])


# ---- aliasing ----
def test_same_array_passed_twice_is_one_device_buffer(scale):
    x = np.arange(8, dtype=np.float32)
    scale.launch(1, 32, [x, x, np.int32(8)])
    assert np.array_equal(x, 2 * np.arange(8, dtype=np.float32))


def test_reshaped_view_of_the_same_memory_shares_its_device_buffer(scale):
    x = np.arange(8, dtype=np.float32)
    scale.launch(1, 32, [x.reshape(2, 4), x, np.int32(8)])
    assert np.array_equal(x, 2 * np.arange(8, dtype=np.float32))


def test_read_only_view_and_writable_array_of_one_memory_keep_the_writes(scale):
    x = np.arange(8, dtype=np.float32)
    view = x.view()
    view.flags.writeable = False
    scale.launch(1, 32, [x, view, np.int32(8)])
    assert np.array_equal(x, 2 * np.arange(8, dtype=np.float32))


def test_overlapping_contiguous_slices_point_into_one_buffer_at_their_offsets(vecadd):
    y = np.arange(12, dtype=np.float32)
    out = np.zeros(8, np.float32)
    vecadd.launch(1, 32, [y[:8], y[4:], out, np.int32(8)])
    assert np.array_equal(out, y[:8] + y[4:])


def test_overlapping_strided_views_are_refused_in_one_line(scale):
    z = np.arange(16, dtype=np.float32)
    with pytest.raises(UsageError) as error:
        scale.launch(1, 32, [z[::2], z[:8], np.int32(8)])
    assert "argument 0 (out" in one_line(error) and "argument 1 (in" in str(error.value)


def test_interleaved_views_that_share_no_byte_stay_separate_buffers(scale):
    z = np.arange(16, dtype=np.float32)
    scale.launch(1, 32, [z[::2], z[1::2], np.int32(8)])
    assert np.array_equal(z[::2], 2 * np.arange(1, 16, 2, dtype=np.float32))
    assert np.array_equal(z[1::2], np.arange(1, 16, 2, dtype=np.float32))


# ---- scalars ----
@pytest.mark.parametrize("value", [None, [8], "abc", "1000", float("nan"), 1000.7, 8.0],
                         ids=["None", "list", "text", "numeric-text", "nan", "fraction", "integral-float"])
def test_integer_parameter_refuses_what_is_not_an_integer(scale, value):
    with pytest.raises(UsageError) as error:
        scale.launch(1, 32, [np.zeros(8, np.float32), A, value])
    assert "argument 2 (n, .u32) of scale expects an integer" in one_line(error)


@pytest.mark.parametrize("value", [None, [1.0, 2.0]], ids=["None", "list"])
def test_pointer_parameter_refuses_none_and_lists(scale, value):
    with pytest.raises(UsageError) as error:
        scale.launch(1, 32, [np.zeros(8, np.float32), value, np.int32(8)])
    assert "argument 1 (in, .u64) of scale" in one_line(error)


def test_object_array_argument_is_refused(scale):
    with pytest.raises(UsageError) as error:
        scale.launch(1, 32, [np.zeros(8, np.float32), np.array([1, 2], dtype=object), np.int32(8)])
    assert "argument 1 (in, .u64) of scale is an array of Python objects" in one_line(error)


def test_python_int_still_fills_an_integer_parameter(scale):
    out = np.zeros(8, np.float32)
    scale.launch(1, 32, [out, A, 4])
    assert np.array_equal(out, np.concatenate([2 * A[:4], np.zeros(4, np.float32)]))


@pytest.mark.parametrize("value", [None, "abcd", np.array([1, 2], dtype=object)], ids=["None", "text", "objects"])
def test_set_symbol_refuses_what_is_not_numbers(value):
    module = emulator.load(COEF_PTX)
    with pytest.raises(UsageError) as error:
        module.set_symbol("coef", value)
    assert "symbol 'coef' takes a numpy array or numbers" in one_line(error)


# ---- launch configuration ----
@pytest.mark.parametrize("grid, block, shared, what", [
    ("64", 16, 0, "grid"),
    (4.0, 32, 0, "grid"),
    ((4.9,), 32, 0, "grid"),
    (None, 32, 0, "grid"),
    (1, 4.0, 0, "block"),
    (1, (32, "1"), 0, "block"),
    (1, 32, 4.0, "shared"),
    (1, 32, 1.5, "shared"),
])
def test_non_integer_dimensions_and_shared_size_are_refused(vecadd, grid, block, shared, what):
    with pytest.raises(LaunchError) as error:
        vecadd.launch(grid, block, [A, B, np.zeros(8, np.float32), np.int32(8)], shared)
    assert what in one_line(error) and "integer" in str(error.value)


def test_numpy_integer_dimensions_are_accepted(vecadd):
    out = np.zeros(8, np.float32)
    vecadd.launch(np.int64(1), np.array([32, 1]), [A, B, out, np.int32(8)], np.int32(0))
    assert np.array_equal(out, A + B)


@pytest.mark.parametrize("max_steps", [0, -5])
def test_max_steps_below_one_is_refused(vecadd, max_steps):
    with pytest.raises(UsageError) as error:
        vecadd.launch(1, 32, [A, B, np.zeros(8, np.float32), np.int32(8)], max_steps=max_steps)
    assert "max_steps must be a positive integer" in one_line(error)


@pytest.mark.parametrize("arch", [5, 1000, 0])
def test_integer_arch_outside_10_to_999_is_refused_like_a_name(arch):
    with pytest.raises(UsageError) as error:
        Device(arch=arch)
    assert "is not sm_NN" in one_line(error)


def test_integer_arch_inside_the_range_is_kept(vecadd):
    assert Device(arch=70).arch == 70
    out = np.zeros(8, np.float32)
    vecadd.launch(1, 32, [A, B, out, np.int32(8)], arch=80)
    assert np.array_equal(out, A + B)
    with pytest.raises(UsageError):
        vecadd.launch(1, 32, [A, B, out, np.int32(8)], arch=5)


# ---- load ----
@pytest.mark.parametrize("path", ["kernels/missing.ptx", "missing.ptx", "some/dir/kernel"])
def test_load_of_a_missing_path_says_no_such_file(path):
    with pytest.raises(UsageError) as error:
        emulator.load(path)
    assert one_line(error) == f"{path}: no such file"


def test_load_takes_ptx_text_given_as_bytes():
    assert emulator.load(SCALE_PTX.encode()).kernel_names == ["scale"]


def test_load_refuses_bytes_that_are_not_utf8_in_one_line():
    with pytest.raises(UsageError) as error:
        emulator.load(b"\xff\xfe.version 8.0")
    assert "not UTF-8" in one_line(error)


HALF_PARAMETERS = """.version 8.0
.target sm_90
.address_size 64
.visible .entry halves(.param .f16 h, .param .bf16 b, .param .u64 out)
{
    .reg .b16 %h<3>;
    .reg .u64 %rd<2>;
    ld.param.b16 %h1, [h];
    ld.param.b16 %h2, [b];
    ld.param.u64 %rd1, [out];
    st.global.b16 [%rd1], %h1;
    st.global.b16 [%rd1+2], %h2;
    ret;
}
"""


def test_python_floats_for_half_parameters_are_rounded_once_to_their_codes():
    out = np.zeros(2, np.uint16)
    emulator.load(HALF_PARAMETERS).kernel("halves").launch(1, 1, [1 + 2 ** -11 + 2 ** -40, 3.14159, out])
    # just above halfway between f16 1.0 (0x3C00) and its successor: rounded once it is 0x3C01; through f32 it
    # would first become the exact halfway point and round to even, 0x3C00. bf16(pi) is 0x4049.
    assert out.tolist() == [0x3C01, 0x4049]


def test_a_sass_kernel_refuses_a_fractional_shared_size_like_a_ptx_one():
    listing = ROOT / "examples" / "sass" / "kernels.sm_90.sass"
    kernel = emulator.load(str(listing)).kernel("saxpy")
    with pytest.raises(LaunchError, match="dynamic shared memory size float 1.5 must be an integer"):
        kernel.launch(1, 32, [np.float32(2), np.zeros(32, np.float32), np.zeros(32, np.float32), np.int32(32)], 1.5)


def test_a_file_without_kernels_says_so_and_a_choice_of_kernels_names_both_ways_to_pick():
    with pytest.raises(UsageError, match=r"^<ptx> defines no kernel \(no \.entry with a body\)$"):
        emulator.load(".version 8.0\n.target sm_90\n.address_size 64\n").kernel()
    two = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry a()\n{\nret;\n}\n" \
          ".visible .entry b()\n{\nret;\n}\n"
    with pytest.raises(UsageError, match=r"has 2 kernels \(a, b\): choose one by name \(--kernel NAME, or "
                                         r"kernel\(NAME\) from Python\)"):
        emulator.load(two).kernel()
