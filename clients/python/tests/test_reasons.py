"""The `Reason` constants against the generated enum; no server needed."""

from askuser.v1 import errors_pb2

from askuser_client import Reason, reason_name

PREFIX = "ERROR_REASON_"


def constants() -> dict[str, str]:
    return {name: value for name, value in vars(Reason).items() if name.isupper()}


def test_each_reason_constant_is_a_generated_name_without_the_prefix():
    declared = {
        name.removeprefix(PREFIX): number
        for name, number in errors_pb2.ErrorReason.items()
        if number != errors_pb2.ERROR_REASON_UNSPECIFIED
    }
    assert constants() == {name: name for name in declared}
    for name, number in declared.items():
        assert reason_name(number) == name


def test_the_reason_strings_are_unique():
    assert len(set(constants().values())) == len(constants())
