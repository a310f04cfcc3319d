"""Launch specifications (docs/launch-spec.md): malformed launches.json files and --arg specs are one clear line
naming the file, the launch and the key, never a raw Python exception; structs pass by value."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from emulator.errors import UsageError
from emulator.runtime.module import Device, Module
from emulator.runtime.spec import LaunchSpec, check_launch, default_arguments, parse_arg, read_launches, run_launch

ROOT = Path(__file__).resolve().parents[1]

COPY_PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry copy(.param .u64 out, .param .u32 value)
{
    .reg .u32 %r<2>;
    .reg .u64 %rd<2>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [value];
    st.global.u32 [%rd1], %r1;
    ret;
}
"""

STRUCT_PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry sk(.param .align 8 .b8 s[16], .param .u64 out)
{
    .reg .u32 %r<4>;
    .reg .u64 %rd<4>;
    ld.param.u32 %r1, [s];
    ld.param.u32 %r2, [s+12];
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1], %r1;
    st.global.u32 [%rd1+4], %r2;
    ret;
}
"""

GOOD_LAUNCH = {"name": "one", "kernel": "copy", "grid": [1, 1, 1], "block": [1, 1, 1], "shared": 0,
               "args": ["zeros:u32:1", "u32:7"], "tolerance": None}


def gpuemu(*args):
    return subprocess.run([sys.executable, "-m", "emulator", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def write_launches(directory: Path, content) -> Path:
    (directory / "copy.ptx").write_text(COPY_PTX)
    path = directory / "launches.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def one_launch(**changes) -> dict:
    entry = {**GOOD_LAUNCH, **changes}
    return {"ptx": "copy.ptx", "launches": [{key: value for key, value in entry.items() if value is not ...}]}


def assert_one_line(error: UsageError, *fragments: str):
    message = str(error)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message


def test_a_well_formed_launches_file_reads_and_runs(tmp_path):
    spec, = read_launches(write_launches(tmp_path, one_launch()))
    assert (spec.grid, spec.block, spec.shared, spec.stdout) == ((1, 1, 1), (1, 1, 1), 0, False)
    args, _ = run_launch(spec)
    assert args[0][0] == 7


@pytest.mark.parametrize("content, fragments", [
    ("{\"launches\": [", ["not valid JSON"]),
    ([], ['should be an object with a "launches" list']),
    ({"ptx": "copy.ptx"}, ['should have a "launches" list']),
    ({"ptx": "copy.ptx", "launches": [7]}, ["launch 0", "should be an object"]),
    ({"ptx": "copy.ptx", "launches": [{k: v for k, v in GOOD_LAUNCH.items() if k != "name"}]},
     ["launch 0", 'no "name"']),
    ({"ptx": "copy.ptx", "launchez": []}, ['unknown key "launchez"']),
], ids=["invalid-json", "not-an-object", "no-launches", "entry-not-object", "no-name", "unknown-file-key"])
def test_malformed_launches_file_is_one_line_naming_the_file(tmp_path, content, fragments):
    path = write_launches(tmp_path, content)
    with pytest.raises(UsageError) as info:
        read_launches(path)
    assert_one_line(info.value, str(path), *fragments)


@pytest.mark.parametrize("changes, fragments", [
    ({"kernel": ...}, ['no "kernel"']),
    ({"grid": ...}, ['no "grid"']),
    ({"grid": "64"}, ['"grid" should be 1 to 3 positive integers, not "64"']),
    ({"grid": [0, 1, 1]}, ['"grid" should be 1 to 3 positive integers']),
    ({"block": [1, 1, 1, 1]}, ['"block" should be 1 to 3 positive integers']),
    ({"block": [True]}, ['"block" should be 1 to 3 positive integers']),
    ({"block": [2.5]}, ['"block" should be 1 to 3 positive integers']),
    ({"args": ...}, ['no "args"']),
    ({"args": "u32:7"}, ['"args" should be a list']),
    ({"args": ["zeros:u32:1", 7]}, ['args[1] should be an --arg string such as "i32:7" or "@file.npy", not 7']),
    ({"shared": "lots"}, ['"shared" should be a non-negative integer (bytes), not "lots"']),
    ({"shared": -4}, ['"shared" should be a non-negative integer']),
    ({"stdout": "false"}, ['"stdout" should be true or false, not "false"']),
    ({"stdout": 0}, ['"stdout" should be true or false, not 0']),
    ({"tolerance": "loose"}, ['"tolerance" should be null or an object']),
    ({"tolerance": {"ulps": 2}}, ['"tolerance" has unknown key "ulps"']),
    ({"tolerance": {"note": "why"}}, ['"tolerance" needs "ulp", "rel" or "abs"']),
    ({"tolerance": {"ulp": 2, "rel": 1e-6}}, ['takes "ulp" or "rel", not both']),
    ({"tolerance": {"abs": "1e-6"}}, ['tolerance "abs" should be a non-negative number']),
    ({"const": {"coef": "coef.npy"}}, ['const "coef" should be "@file.npy"']),
    ({"expect_error": 3}, ['"expect_error" should be a non-empty string']),
    ({"tolerence": {"ulp": 2}}, ['unknown key "tolerence"']),
    ({"args": [list(range(100))]}, ["args[0] should be an --arg string", "not [0, 1, 2, 3", "..."]),
    ({"ptx": "missing.ptx"}, ["PTX file", "missing.ptx not found"]),
], ids=lambda value: json.dumps(value, default=str) if isinstance(value, dict) else "")
def test_malformed_launch_is_one_line_naming_the_file_launch_and_key(tmp_path, changes, fragments):
    path = write_launches(tmp_path, one_launch(**changes))
    with pytest.raises(UsageError) as info:
        read_launches(path)
    assert_one_line(info.value, f"{path}: launch 'one'", *fragments)


def test_launch_without_any_ptx_key_is_refused(tmp_path):
    path = write_launches(tmp_path, {"launches": [GOOD_LAUNCH]})
    with pytest.raises(UsageError) as info:
        read_launches(path)
    assert_one_line(info.value, f"{path}: launch 'one'", 'no "ptx"')


def test_a_bare_integer_grid_or_block_is_one_dimension(tmp_path):
    spec, = read_launches(write_launches(tmp_path, one_launch(grid=4, block=32)))
    assert (spec.grid, spec.block) == ((4,), (32,))


def test_two_launches_of_one_name_are_refused(tmp_path):
    path = write_launches(tmp_path, {"ptx": "copy.ptx", "launches": [GOOD_LAUNCH, GOOD_LAUNCH]})
    with pytest.raises(UsageError) as info:
        read_launches(path)
    assert_one_line(info.value, f"{path}: launch 'one'", "a second launch of that name")


def test_missing_launches_file_is_one_line(tmp_path):
    with pytest.raises(UsageError) as info:
        read_launches(tmp_path / "launches.json")
    assert_one_line(info.value, str(tmp_path / "launches.json"), "cannot read")


def test_every_launches_file_in_the_repository_still_reads():
    files = sorted(ROOT.glob("examples/*/launches.json")) + sorted(ROOT.glob("tests/*/launches.json"))
    assert files and all(read_launches(path) for path in files)


@pytest.mark.parametrize("args, fragments", [
    (["zeros:u32:1", "u32:x"], ["'x' in 'u32:x' is not a uint32 value"]),
    (["@missing.npy", "u32:7"], ["missing.npy' not found"]),
    (["zeros:u32:1"], ["takes 2 arguments, 1 given"]),
], ids=["bad-scalar", "missing-file", "too-few"])
def test_bad_argument_at_run_time_names_the_file_and_launch(tmp_path, args, fragments):
    path = write_launches(tmp_path, one_launch(args=args))
    spec, = read_launches(path)
    with pytest.raises(UsageError) as info:
        run_launch(spec)
    assert_one_line(info.value, f"{path}: launch 'one'", *fragments)


def test_run_launch_of_a_missing_ptx_file_is_one_line(tmp_path):
    spec = LaunchSpec(directory=tmp_path, name="gone", ptx=tmp_path / "gone.ptx", kernel="copy", grid=(1,),
                      block=(1,), shared=0, args=[])
    with pytest.raises(UsageError) as info:
        run_launch(spec)
    assert_one_line(info.value, "launch 'gone'", "cannot read PTX file", "gone.ptx")


def test_check_launch_without_recorded_stdout_says_so(tmp_path):
    spec, = read_launches(write_launches(tmp_path, one_launch(stdout=True)))
    args, printed = run_launch(spec)
    assert check_launch(spec, args, printed) == ["arg0: no recorded result", "stdout: no recorded result"]


def test_struct_parameter_gets_zero_bytes_of_its_size_by_default():
    kernel = Module(STRUCT_PTX, "structp.ptx", Device()).kernel("sk")
    args, note = default_arguments(kernel.params, (1,), (1,))
    assert isinstance(args[0], np.void) and args[0].tobytes() == bytes(16)
    assert "each struct or array passed by value (s) zero bytes of its size" in note
    kernel.launch((1,), (1,), args)
    assert not args[1].any()


def test_array_parameter_of_a_wide_type_gets_zero_bytes_by_default():
    kernel = Module(STRUCT_PTX.replace(".align 8 .b8 s[16]", ".align 8 .u32 s[4]"), "arrayp.ptx", Device())
    args, _ = default_arguments(kernel.kernel("sk").params, (1,), (1,))
    assert isinstance(args[0], np.void) and args[0].nbytes == 16


def test_struct_parameter_without_arg_runs_from_the_cli(tmp_path):
    ptx = tmp_path / "structp.ptx"
    ptx.write_text(STRUCT_PTX)
    result = gpuemu("run", ptx, "--grid", "1", "--block", "1", "--out", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "zero bytes of its size" in result.stderr and "Traceback" not in result.stderr


def test_bytes_arg_passes_a_struct_by_value():
    kernel = Module(STRUCT_PTX, "structp.ptx", Device()).kernel("sk")
    args = [parse_arg("bytes:01000000_00000000_00000000_02000000"), parse_arg("zeros:u32:2")]
    kernel.launch((1,), (1,), args)
    assert args[1].tolist() == [1, 2]


def test_bytes_arg_passes_a_struct_by_value_from_the_cli(tmp_path):
    ptx = tmp_path / "structp.ptx"
    ptx.write_text(STRUCT_PTX)
    result = gpuemu("run", ptx, "--grid", "1", "--block", "1", "--arg", "bytes:0300000000000000000000000400ffff",
                    "--arg", "zeros:u32:2", "--out", tmp_path)
    assert result.returncode == 0, result.stderr
    assert np.load(tmp_path / "arg1.npy").tolist() == [3, 0xffff0004]


@pytest.mark.parametrize("spec, fragment", [
    ("bytes:", "'bytes:' has no bytes"),
    ("bytes:123", "odd number of hex digits"),
    ("bytes:zz", "'zz' in 'bytes:zz' is not hex digits"),
])
def test_malformed_bytes_arg_is_one_line(spec, fragment):
    with pytest.raises(UsageError) as info:
        parse_arg(spec)
    assert_one_line(info.value, fragment)


def test_bytes_arg_of_the_wrong_size_is_one_line_from_the_cli(tmp_path):
    ptx = tmp_path / "structp.ptx"
    ptx.write_text(STRUCT_PTX)
    result = gpuemu("run", ptx, "--grid", "1", "--block", "1", "--arg", "bytes:0100", "--arg", "zeros:u32:2")
    assert result.returncode == 2
    assert result.stderr.startswith("gpuemu: error: ") and len(result.stderr.strip().splitlines()) == 1
    assert "(2 bytes) but parameter s is .b8 (16 bytes)" in result.stderr


@pytest.mark.parametrize("spec, fragment", [
    ("f32:1e39", "1e39 in 'f32:1e39' is out of range for float32"),
    ("f32:-1e39", "-1e39 in 'f32:-1e39' is out of range for float32"),
    ("f16:1e6", "1e6 in 'f16:1e6' is out of range for float16 (largest 65504)"),
    ("f64:1e400", "1e400 in 'f64:1e400' is out of range for float64"),
])
def test_float_arg_that_overflows_its_type_is_an_error(spec, fragment, recwarn):
    with pytest.raises(UsageError) as info:
        parse_arg(spec)
    assert_one_line(info.value, fragment)
    assert not recwarn.list


@pytest.mark.parametrize("spec, bits", [
    ("f32:inf", np.float32(np.inf)), ("f32:-Infinity", np.float32(-np.inf)), ("f16:nan", np.float16(np.nan)),
    ("f16:65504", np.float16(65504)), ("f32:1e-50", np.float32(0)),
])
def test_float_arg_spelled_inf_or_nan_or_in_range_is_kept(spec, bits, recwarn):
    value = parse_arg(spec)
    assert value.dtype == bits.dtype and value.tobytes() == bits.tobytes()
    assert not recwarn.list


def test_float_arg_overflow_is_one_line_from_the_cli():
    result = gpuemu("run", ROOT / "examples" / "vecadd" / "vecadd.ptx", "--grid", "1", "--block", "32",
                    "--arg", "zeros:f32:32", "--arg", "zeros:f32:32", "--arg", "f32:1e39", "--arg", "i32:32")
    assert result.returncode == 2
    assert result.stderr.strip() == ("gpuemu: error: 1e39 in 'f32:1e39' is out of range for float32 "
                                     "(largest 3.4028235e+38)")
