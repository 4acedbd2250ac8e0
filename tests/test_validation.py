"""Every rule of SPEC.md fires, naming the operator, the field, the value and the rule."""

from __future__ import annotations

import numpy as np
import pytest

import dmlops
from dmlops import (
    Binding,
    BindingError,
    BufferTensorDesc,
    DataType,
    Device,
    DmlError,
    FeatureLevel,
    InvalidDescriptorError,
    JoinDesc,
    Slice1Desc,
    SliceDesc,
    SplitDesc,
    UnsupportedFeatureLevelError,
)
from dmlops.tensor import calc_buffer_tensor_size

F32 = DataType.FLOAT32


def t(*sizes: int, dt: DataType = F32, **kw) -> BufferTensorDesc:  # type: ignore[no-untyped-def]
    return BufferTensorDesc(dt, sizes, **kw)


def fails(desc, match: str, level=FeatureLevel.FL_6_4, kind=InvalidDescriptorError):  # type: ignore[no-untyped-def]
    with pytest.raises(kind, match=match) as info:
        desc.validate(level)
    assert isinstance(info.value, DmlError) and isinstance(info.value, ValueError)
    return str(info.value)


# --- tensor model ------------------------------------------------------------------------


def test_enum_values_are_directml_values() -> None:
    assert DataType.FLOAT32 == 1 and DataType.FLOAT16 == 2 and DataType.INT64 == 11
    assert [d.element_size for d in DataType] == [0, 4, 2, 4, 2, 1, 4, 2, 1, 8, 8, 8]
    assert FeatureLevel.FL_1_0 == 0x1000 and FeatureLevel.FL_2_1 == 0x2100
    assert FeatureLevel.FL_4_1 == 0x4100 and FeatureLevel.FL_5_0 == 0x5000
    assert DataType.parse("DML_TENSOR_DATA_TYPE_UINT8") is DataType.UINT8
    assert FeatureLevel.parse("DML_FEATURE_LEVEL_3_1") is FeatureLevel.FL_3_1


def test_implied_size_rule() -> None:
    assert calc_buffer_tensor_size(F32, [1, 1, 4, 4], None) == 64
    assert calc_buffer_tensor_size(DataType.UINT8, [3], None) == 4  # rounded up to 4
    # (2-1)*8 + (3-1)*2 + 1 = 13 elements * 2 bytes = 26, rounded up to 28
    assert calc_buffer_tensor_size(DataType.FLOAT16, [2, 3], [8, 2]) == 28


def test_implied_size_with_strides_and_broadcast() -> None:
    assert calc_buffer_tensor_size(F32, [5, 7], [0, 0]) == 4
    assert t(2, 3).total_tensor_size_in_bytes == 24


@pytest.mark.parametrize(
    "desc, match",
    [
        (t(1, 0, 4), r"SLICE\.InputTensor\.Sizes\[1\] is 0: sizes must be at least 1"),
        (t(1, -2, 4), r"SLICE\.InputTensor\.Sizes\[1\] is -2: a UINT field cannot be negative"),
        (t(1, 2**32, 4), r"SLICE\.InputTensor\.Sizes\[1\] is 4294967296: exceeds the UINT"),
        (t(*([1] * 9)), r"SLICE\.InputTensor\.DimensionCount is 9: must be 1 to 8"),
        (t(2, 2, strides=[2]), r"SLICE\.InputTensor\.Strides has 1 entries"),
        (t(2, 2, strides=[-1, 1]), r"SLICE\.InputTensor\.Strides\[0\] is -1"),
        (
            t(2, 2, total_tensor_size_in_bytes=12),
            r"TotalTensorSizeInBytes is 12: must be at least the implied size 16",
        ),
        (
            t(2, 2, guaranteed_base_offset_alignment=12),
            r"GuaranteedBaseOffsetAlignment is 12: must be 0 or a power of two",
        ),
        (t(2, 2, flags=2), r"SLICE\.InputTensor\.Flags is 2"),
        (t(2, 2, dt=DataType.UNKNOWN), r"SLICE\.InputTensor\.DataType is UNKNOWN"),
    ],
)
def test_tensor_desc_rules(desc: BufferTensorDesc, match: str) -> None:
    op = SliceDesc(desc, t(1, 1), [0] * 2, [1, 1], [1, 1], dimension_count=2)
    fails(op, match)


def test_owned_by_dml_flag_is_accepted() -> None:
    SliceDesc(t(2, 2, flags=1), t(1, 1), [0, 0], [1, 1], [1, 1]).validate()


def test_overlapping_output_strides_are_rejected() -> None:
    fails(
        SliceDesc(t(4, 4), t(2, 2, strides=[1, 1]), [0, 0], [2, 2], [1, 1]),
        r"SLICE\.OutputTensor\.Strides is \[1, 1\]: two output elements",
    )
    fails(
        SplitDesc(t(2, 4), [t(2, 2), t(2, 2, strides=[0, 1])], 1),
        r"SPLIT\.OutputTensors\[1\]\.Strides is \[0, 1\]",
    )
    # non-nested but injective (0,2,4,3,5,7) is accepted
    SliceDesc(t(3, 2), t(3, 2, strides=[2, 3]), [0, 0], [3, 2], [1, 1]).validate()


# --- SLICE --------------------------------------------------------------------------------


def slice_desc(**kw):  # type: ignore[no-untyped-def]
    args = dict(
        input_tensor=t(1, 1, 4, 4),
        output_tensor=t(1, 1, 3, 2),
        offsets=[0, 0, 1, 2],
        sizes=[1, 1, 3, 2],
        strides=[1, 1, 1, 1],
    )
    args.update(kw)
    return SliceDesc(**args)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(offsets=[0, 0, 1]), r"SLICE\.DimensionCount is 3: Sizes has 4 entries"),
        (
            dict(offsets=[0, 0, -1, 2]),
            r"SLICE\.Offsets\[2\] is -1: a UINT field cannot be negative",
        ),
        (dict(strides=[1, 1, 1, 0]), r"SLICE\.Strides\[3\] is 0: strides must be at least 1"),
        (
            dict(sizes=[1, 1, 2, 2]),
            r"SLICE\.Sizes\[2\] is 2: must equal OutputTensor\.Sizes\[2\] 3",
        ),
        (
            dict(offsets=[0, 0, 2, 2]),
            r"SLICE\.Offsets\[2\] is 2: .* = 4 reads outside InputTensor\.Sizes\[2\] 4",
        ),
        (dict(strides=[1, 1, 2, 1]), r"SLICE\.Offsets\[2\] is 1: .*Strides\[2\]"),
        (
            dict(output_tensor=t(1, 1, 3, 2, dt=DataType.FLOAT16)),
            r"SLICE\.OutputTensor\.DataType is FLOAT16: must equal InputTensor\.DataType FLOAT32",
        ),
        (
            dict(output_tensor=t(1, 3, 2)),
            r"SLICE\.OutputTensor\.DimensionCount is 3: must equal InputTensor\.DimensionCount 4",
        ),
        (dict(dimension_count=5), r"SLICE\.DimensionCount is 5: Offsets has 4 entries"),
        (
            dict(
                input_tensor=t(1, 4, 4),
                output_tensor=t(1, 3, 2),
                offsets=[0, 1, 2, 0],
                sizes=[1, 3, 2, 1],
                strides=[1, 1, 1, 1],
            ),
            r"SLICE\.OutputTensor\.DimensionCount is 3|SLICE\.DimensionCount is 4: must equal InputTensor\.DimensionCount 3",
        ),
    ],
)
def test_slice_rules(kw, match: str) -> None:  # type: ignore[no-untyped-def]
    fails(slice_desc(**kw), match)


def test_slice_feature_levels() -> None:
    three = SliceDesc(t(4, 4, 4), t(1, 1, 1), [0, 0, 0], [1, 1, 1], [1, 1, 1])
    fails(
        three,
        r"SLICE\.InputTensor\.DimensionCount is 3: DML_FEATURE_LEVEL_2_1 and above supports 4 to 5",
        FeatureLevel.FL_2_1,
        UnsupportedFeatureLevelError,
    )
    three.validate(FeatureLevel.FL_3_0)
    i8 = slice_desc(
        input_tensor=t(1, 1, 4, 4, dt=DataType.INT8), output_tensor=t(1, 1, 3, 2, dt=DataType.INT8)
    )
    fails(
        i8,
        r"SLICE\.InputTensor\.DataType is INT8: DML_FEATURE_LEVEL_1_0",
        FeatureLevel.FL_1_0,
        UnsupportedFeatureLevelError,
    )
    i8.validate(FeatureLevel.FL_2_1)
    for dt in (DataType.FLOAT64, DataType.INT64, DataType.UINT64):
        d = slice_desc(input_tensor=t(1, 1, 4, 4, dt=dt), output_tensor=t(1, 1, 3, 2, dt=dt))
        fails(
            d,
            rf"DataType is {dt.name}: DML_FEATURE_LEVEL_3_0",
            FeatureLevel.FL_4_0,
            UnsupportedFeatureLevelError,
        )
        d.validate(FeatureLevel.FL_4_1)
    six = SliceDesc(t(*[1] * 6), t(*[1] * 6), [0] * 6, [1] * 6, [1] * 6)
    fails(six, r"DimensionCount is 6", FeatureLevel.FL_2_0, UnsupportedFeatureLevelError)


# --- SLICE1 -------------------------------------------------------------------------------


def slice1_desc(**kw):  # type: ignore[no-untyped-def]
    args = dict(
        input_tensor=t(1, 1, 4, 4),
        output_tensor=t(1, 1, 2, 2),
        input_window_offsets=[0, 0, 0, 1],
        input_window_sizes=[1, 1, 4, 3],
        input_window_strides=[1, 1, -2, 2],
    )
    args.update(kw)
    return Slice1Desc(**args)


@pytest.mark.parametrize(
    "kw, match",
    [
        (
            dict(input_window_strides=[1, 1, 0, 2]),
            r"^SLICE1\.InputWindowStrides\[2\] is 0: strides may not be 0$",
        ),
        (
            dict(input_window_strides=[1, 1, -(2**31) - 1, 2]),
            r"SLICE1\.InputWindowStrides\[2\] is -2147483649: outside the INT range",
        ),
        (
            dict(input_window_sizes=[1, 0, 4, 3]),
            r"SLICE1\.InputWindowSizes\[1\] is 0: the input window may not be empty",
        ),
        (
            dict(input_window_offsets=[0, 0, 1, 1]),
            r"SLICE1\.InputWindowOffsets\[2\] is 1: InputWindowOffsets\[2\] \+ InputWindowSizes\[2\] = 5 exceeds InputTensor\.Sizes\[2\] 4",
        ),
        (
            dict(input_window_offsets=[0, 0, -1, 1]),
            r"SLICE1\.InputWindowOffsets\[2\] is -1: a UINT field cannot be negative",
        ),
        (
            dict(output_tensor=t(1, 1, 3, 2)),
            r"SLICE1\.OutputTensor\.Sizes\[2\] is 3: must be at most MaxCopiedElements\[2\] = 1 \+ \(4 - 1\) / \|-2\| = 2",
        ),
        (
            dict(input_window_sizes=[1, 1, 4]),
            r"SLICE1\.DimensionCount is 4: InputWindowSizes has 3 entries",
        ),
        (
            dict(output_tensor=t(1, 1, 2, 2, dt=DataType.INT32)),
            r"SLICE1\.OutputTensor\.DataType is INT32",
        ),
    ],
)
def test_slice1_rules(kw, match: str) -> None:  # type: ignore[no-untyped-def]
    fails(slice1_desc(**kw), match)


def test_slice1_partial_output_is_valid() -> None:
    slice1_desc(output_tensor=t(1, 1, 1, 1)).validate()


def test_slice1_feature_levels() -> None:
    fails(
        slice1_desc(),
        r"SLICE1 needs DML_FEATURE_LEVEL_2_1: the feature level is DML_FEATURE_LEVEL_2_0",
        FeatureLevel.FL_2_0,
        UnsupportedFeatureLevelError,
    )
    slice1_desc().validate(FeatureLevel.FL_2_1)
    two = Slice1Desc(t(4, 4), t(2, 2), [0, 0], [4, 4], [2, -2])
    fails(
        two,
        r"DimensionCount is 2: DML_FEATURE_LEVEL_2_1 and above supports 4 to 5",
        FeatureLevel.FL_2_1,
        UnsupportedFeatureLevelError,
    )
    two.validate(FeatureLevel.FL_3_0)
    d64 = slice1_desc(
        input_tensor=t(1, 1, 4, 4, dt=DataType.INT64),
        output_tensor=t(1, 1, 2, 2, dt=DataType.INT64),
    )
    fails(d64, r"DataType is INT64", FeatureLevel.FL_3_1, UnsupportedFeatureLevelError)
    d64.validate(FeatureLevel.FL_4_1)


# --- SPLIT and JOIN -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "desc, match",
    [
        (SplitDesc(t(1, 1, 6, 2), [], 2), r"SPLIT\.OutputCount is 0: must be greater than 0"),
        (
            SplitDesc(t(1, 1, 6, 2), [t(1, 1, 6, 2)], 2, output_count=2),
            r"SPLIT\.OutputCount is 2: OutputTensors has 1 entries",
        ),
        (
            SplitDesc(t(1, 1, 6, 2), [t(1, 1, 6, 2)], 4),
            r"SPLIT\.Axis is 4: must be in \[0, InputTensor\.DimensionCount - 1\] = \[0, 3\]",
        ),
        (
            SplitDesc(t(1, 1, 6, 2), [t(1, 1, 6, 2)], -1),
            r"SPLIT\.Axis is -1: a UINT field cannot be negative",
        ),
        (
            SplitDesc(t(1, 1, 6, 2), [t(1, 1, 2, 2), t(1, 1, 3, 2)], 2),
            r"SPLIT\.OutputTensors Sizes\[2\] sum to 5: must equal InputTensor\.Sizes\[2\] 6",
        ),
        (
            SplitDesc(t(1, 1, 6, 2), [t(1, 1, 3, 2), t(1, 1, 3, 1)], 2),
            r"SPLIT\.OutputTensors\[1\]\.Sizes\[3\] is 1: must equal InputTensor\.Sizes\[3\] 2",
        ),
        (
            SplitDesc(t(1, 1, 6, 2), [t(1, 1, 6, 2, dt=DataType.INT16)], 2),
            r"SPLIT\.OutputTensors\[0\]\.DataType is INT16",
        ),
        (
            SplitDesc(t(1, 1, 6, 2), [t(1, 6, 2)], 2),
            r"SPLIT\.OutputTensors\[0\]\.DimensionCount is 3: must equal InputTensor\.DimensionCount 4",
        ),
        (JoinDesc([], t(1, 1, 6, 2), 2), r"JOIN\.InputCount is 0: must be greater than 0"),
        (
            JoinDesc([t(1, 1, 6, 2)], t(1, 1, 6, 2), 2, input_count=3),
            r"JOIN\.InputCount is 3: InputTensors has 1 entries",
        ),
        (
            JoinDesc([t(1, 1, 6, 2)], t(1, 1, 6, 2), 7),
            r"JOIN\.Axis is 7: must be in \[0, OutputTensor\.DimensionCount - 1\]",
        ),
        (
            JoinDesc([t(1, 1, 2, 2), t(1, 1, 2, 2)], t(1, 1, 6, 2), 2),
            r"JOIN\.InputTensors Sizes\[2\] sum to 4: must equal OutputTensor\.Sizes\[2\] 6",
        ),
        (
            JoinDesc([t(1, 1, 2, 3), t(1, 2, 4, 2)], t(1, 1, 6, 2), 2),
            r"JOIN\.InputTensors\[0\]\.Sizes\[3\] is 3",
        ),
        (
            JoinDesc([t(1, 1, 6, 2, dt=DataType.UINT16)], t(1, 1, 6, 2), 2),
            r"JOIN\.InputTensors\[0\]\.DataType is UINT16",
        ),
    ],
)
def test_split_join_rules(desc, match: str) -> None:  # type: ignore[no-untyped-def]
    fails(desc, match)


@pytest.mark.parametrize(
    "make",
    [
        lambda sizes, dt: SplitDesc(t(*sizes, dt=dt), [t(*sizes, dt=dt)], 0),
        lambda sizes, dt: JoinDesc([t(*sizes, dt=dt)], t(*sizes, dt=dt), 0),
    ],
)
def test_split_join_feature_levels(make) -> None:  # type: ignore[no-untyped-def]
    five = make((1, 1, 1, 2, 2), F32)
    fails(
        five,
        r"DimensionCount is 5: DML_FEATURE_LEVEL_2_1 and above supports 4 dimensions",
        FeatureLevel.FL_2_1,
        UnsupportedFeatureLevelError,
    )
    fails(
        make((2, 2, 2), F32),
        r"DimensionCount is 3: DML_FEATURE_LEVEL_1_0 and above supports 4 dimensions",
        FeatureLevel.FL_1_0,
        UnsupportedFeatureLevelError,
    )
    five.validate(FeatureLevel.FL_3_0)
    make((1, 1, 2, 2), DataType.UINT8).validate(FeatureLevel.FL_2_1)
    fails(
        make((1, 1, 2, 2), DataType.UINT8),
        r"DataType is UINT8",
        FeatureLevel.FL_1_0,
        UnsupportedFeatureLevelError,
    )
    fails(
        make((2,), DataType.FLOAT64),
        r"DataType is FLOAT64",
        FeatureLevel.FL_4_0,
        UnsupportedFeatureLevelError,
    )
    make((2,), DataType.FLOAT64).validate(FeatureLevel.FL_4_1)


def test_seed_split_example_rule_pseudocode() -> None:
    # a split of 3 may be 1+1+1, 1+2, 2+1 or 3 (seed 001)
    for parts in ([1, 1, 1], [1, 2], [2, 1], [3]):
        SplitDesc(t(1, 1, 3, 1), [t(1, 1, p, 1) for p in parts], 2).validate(FeatureLevel.FL_1_0)


# --- bindings and functional argument rules -----------------------------------------------


def test_binding_rules() -> None:
    op = Device().create_operator(slice_desc())
    x = np.zeros(16, np.float32)
    y = np.zeros(6, np.float32)
    with pytest.raises(
        BindingError,
        match=r"SLICE\.InputTensor binding: 60 bytes bound, TotalTensorSizeInBytes needs 64",
    ):
        op.execute([Binding(x, 4)], [y])
    with pytest.raises(BindingError, match=r"2 inputs bound, the operator has 1"):
        op.execute([x, x], [y])
    with pytest.raises(BindingError, match=r"read-only"):
        op.execute([x], [np.frombuffer(bytes(24), np.float32)])
    with pytest.raises(BindingError, match=r"offset 100 is outside"):
        op.execute([Binding(x, 100)], [y])
    with pytest.raises(BindingError, match=r"not a buffer"):
        op.execute([object()], [y])
    al = Device().create_operator(
        slice_desc(input_tensor=t(1, 1, 4, 4, guaranteed_base_offset_alignment=16))
    )
    with pytest.raises(BindingError, match=r"offset 4 breaks GuaranteedBaseOffsetAlignment 16"):
        al.execute([Binding(np.zeros(20, np.float32), 4)], [y])
    al.execute([Binding(np.zeros(20, np.float32), 16)], [y])
    op.execute([bytearray(64)], [bytearray(24)])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda x, e: dmlops.split(x, 1, [0, 0]), r"SPLIT\.OutputTensors Sizes\[1\] sum to 0"),
        (lambda x, e: dmlops.split(e, 0, [1, 0]), r"SPLIT\.OutputTensors Sizes\[0\] sum to 1"),
        (
            lambda x, e: dmlops.join([x, np.zeros((5, 0), np.float32)], 1),
            r"JOIN\.InputTensors\[1\]\.Sizes\[0\] is 5",
        ),
        (
            lambda x, e: dmlops.join([x, np.zeros((2, 0), np.float16)], 1),
            r"JOIN\.InputTensors\[1\]\.DataType is FLOAT16",
        ),
        (
            lambda x, e: dmlops.depth_to_space(np.zeros((0, 7, 2, 2), np.float32), 2),
            r"DEPTH_TO_SPACE1\.InputTensor\.Sizes\[1\] is 7",
        ),
        (
            lambda x, e: dmlops.space_to_depth(np.zeros((0, 2, 3, 4), np.float32), 2),
            r"SPACE_TO_DEPTH1\.InputTensor\.Sizes\[2\] is 3",
        ),
        (lambda x, e: dmlops.slice(e, [0, 0], [2, 1], [1, 1]), r"SLICE\.InputTensor is empty"),
    ],
)
def test_empty_arrays_keep_the_rules_that_hold_for_them(call, message) -> None:  # type: ignore[no-untyped-def]
    # sizes of 0 are numpy's and torch's, not DirectML's: the rules that still make sense
    # (pieces summing to the whole, matching sizes and types, block divisibility) hold
    x, e = np.ones((2, 3), np.float32), np.ones((2, 0), np.float32)
    with pytest.raises(InvalidDescriptorError, match=message):
        call(x, e)


def test_functional_follows_directml_fields() -> None:
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    with pytest.raises(
        InvalidDescriptorError, match=r"SLICE\.Offsets\[0\] is -1: a UINT field cannot be negative"
    ):
        dmlops.slice(x, [-1, 0], [1, 1], [1, 1])
    with pytest.raises(InvalidDescriptorError, match=r"SPLIT\.Axis is -1"):
        dmlops.split(x, -1, [2, 2])
    # sizes of 0 are numpy's empty results above the Device API (DirectML refuses them)
    assert dmlops.split(x, 0, [4, 0])[1].shape == (0, 4)
    assert dmlops.slice(x, [0, 0], [1, 0], [1, 1]).shape == (1, 0)
    with pytest.raises(InvalidDescriptorError, match=r"numpy dtype <U.* is not moved"):
        dmlops.slice(x.astype(str), [0, 0], [1, 1], [1, 1])
    with pytest.raises(InvalidDescriptorError, match=r"SLICE1\.InputWindowStrides\[1\] is 0"):
        dmlops.slice1(x, [0, 0], [4, 4], [1, 0])
    with pytest.raises(
        UnsupportedFeatureLevelError, match=r"SLICE\.InputTensor\.DimensionCount is 2"
    ):
        dmlops.slice(x, [0, 0], [1, 1], [1, 1], feature_level=FeatureLevel.FL_2_1)
    with pytest.raises(InvalidDescriptorError, match=r"JOIN\.InputTensors\[1\]\.DataType is INT32"):
        dmlops.join([x, x.astype(np.int32)], 0)
    with pytest.raises(InvalidDescriptorError, match=r"SLICE\.OutputTensor\.DataType is FLOAT64"):
        dmlops.slice(x, [0, 0], [1, 1], [1, 1], out=np.zeros((1, 1)))
    assert dmlops.slice(np.float32(1), [0], [1], [1]).tolist() == [1.0]  # 0-D: its [1] view
    with pytest.raises(BindingError, match=r"read-only"):
        ro = np.zeros((1, 1), np.float32)
        ro.flags.writeable = False
        dmlops.slice(x, [0, 0], [1, 1], [1, 1], out=ro)
    with pytest.raises(InvalidDescriptorError, match=r"SLICE\.OutputTensor\.Strides is \[0, 1\]"):
        dmlops.slice(
            x, [0, 0], [2, 2], [1, 1], out=np.broadcast_to(np.zeros(2, np.float32), (2, 2))
        )
