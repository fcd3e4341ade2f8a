# Hooks for the schemathesis runs of TestAPIFuzzedBySchemathesis.
import os

import schemathesis


@schemathesis.hook
def before_call(context, case, kwargs):
    """A request's or an instance's watch stream follows the log until the
    client leaves: by design it never ends on its own, so a fuzzer waiting
    for the whole answer would only time out. Where the generated request
    asks to follow, it asks for the history only (follow=false); any other
    value is left as generated, so the gateway's refusal of a bad one is
    still fuzzed."""
    if case.method.upper() != "GET" or not case.path.endswith("/watch"):
        return
    if case.path.endswith("/migrate/watch"):
        return  # ends by itself once the migration is idle
    # The gateway reads the first value of follow; absent, empty and
    # "true" follow the log.
    query = dict(case.query or {})
    follow = query.get("follow")
    if isinstance(follow, list):
        follow = follow[0] if follow else None
    if follow in (None, "", "true", True):
        query["follow"] = "false"
        case.query = query


@schemathesis.hook
def filter_case(context, case):
    """In the pass of invalid requests only (DROVE_FUZZ_INVALID_ONLY set),
    drop what is not invalid to the gateway: the positive cases
    schemathesis mixes into its negative mode, and those whose only fault
    is an unknown query parameter or the Content-Type label, which the
    gateway ignores by design (it reads every body as JSON)."""
    if not os.environ.get("DROVE_FUZZ_INVALID_ONLY"):
        return True
    return invalid_to_gateway(case)


def invalid_to_gateway(case):
    meta = case.meta
    if meta is None or not meta.generation.mode.is_negative:
        return False
    why = repr(meta.phase).lower()
    return not any(s in why for s in ("additionalproperties", "unexpected_properties", "content_type", "content-type"))
