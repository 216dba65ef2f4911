"""Python lanes: one Pyodide serving a session's executions one after another, behind a verified reset.

Each test plants something in the interpreter or its isolate through a channel the reset must
close (a module attribute, a builtin, a class or function of the standard library, the JavaScript
globals Python reaches through `js`, files in the in-memory file system, callbacks and tasks left
scheduled, hooks of `sys`, the standard streams), then checks from the next execution of the same
session that nothing of it is seen. Where the check retires the interpreter, the test also shows
that the next execution ran in a fresh one: an isolate's `performance.timeOrigin` is the moment it
started, the same for every execution a lane serves and new for a fresh lane. The pause before the
next execution lets the lane finish its reset (otherwise the next execution may take the spare).
"""

from __future__ import annotations

import json
import os
import time

import pytest

from harness import McpClient, ok_py

SECRET = "s3cr3t-" + os.urandom(6).hex()
LANE = "import js\njs.performance.timeOrigin"


@pytest.fixture(scope="module")
def client(stdio_client: McpClient) -> McpClient:
    # The session's first Python execution runs on a single-use lane (its process was started for
    # it: see test_worker_lifecycle.py); the tests below watch the lanes that are reused.
    ok_py(stdio_client, "None")
    return stdio_client


def lane_of(client: McpClient, code: str) -> float:
    """Runs `code` (which must succeed), then returns the lane it ran in."""
    ex = ok_py(client, code + "\nimport js\njs.performance.timeOrigin")
    return ex.result


def next_lane(client: McpClient, code: str = "None") -> tuple[float, object]:
    """After a pause for the reset: the lane of the next execution, and that execution's value."""
    time.sleep(0.3)
    ex = ok_py(client, f"import js\n__v = ({code})\n[js.performance.timeOrigin, __v]")
    return ex.result[0], ex.result[1]


def test_a_lane_serves_the_next_execution_in_the_same_interpreter(client: McpClient) -> None:
    first = lane_of(client, "x = [i * i for i in range(1000)]\nimport json, re, graphlib\nprint('hi')")
    second, names = next_lane(client, "sorted(k for k in globals() if not k.startswith('_'))")
    assert second == first, "a clean execution leaves its lane ready for the next one"
    assert "x" not in names and "graphlib" not in names, names


def test_a_module_imported_by_an_execution_is_dropped(client: McpClient) -> None:
    first = lane_of(client, f"import graphlib, sys\ngraphlib.planted = {json.dumps(SECRET)}")
    lane, planted = next_lane(client, "getattr(__import__('graphlib'), 'planted', None)")
    assert planted is None
    assert lane == first, "a module the execution imported is dropped, the lane stays"


@pytest.mark.parametrize(
    "plant, probe, expected",
    [
        ("import base64\nbase64.b64encode = lambda *a: SECRET", "__import__('base64').b64encode(b'x').decode()", "eA=="),
        ("import builtins\nbuiltins.len = lambda x: SECRET", "len([1, 2])", 2),
        ("import json\njson.JSONEncoder.default = lambda s, o: SECRET",
         "__import__('json').JSONEncoder.default.__qualname__", "JSONEncoder.default"),
        ("import base64\nbase64.b64encode.__code__ = (lambda s, altchars=None: SECRET).__code__",
         "__import__('base64').b64encode(b'x').decode()", "eA=="),
        ("import base64\nbase64.b64encode.__defaults__ = (b'-_',)", "__import__('base64').b64encode.__defaults__", [None]),
        ("import random\nrandom._inst.planted = SECRET", "getattr(__import__('random')._inst, 'planted', None)", None),
        ("import sys\nsys.modules['json'] = type(sys)('json')\nsys.modules['json'].dumps = lambda o: SECRET",
         "__import__('json').dumps([3])", "[3]"),
        ("import sys\nsys.monitoring.use_tool_id(3, 'spy')", "__import__('sys').monitoring.get_tool(3)", None),
        # Renaming an object's last attribute keeps the dict's length and values.
        ("import json\nd = json._default_encoder.__dict__\nk = list(d)[-1]\nd['renamed_' + k] = d.pop(k)",
         "any(k.startswith('renamed_') for k in vars(__import__('json')._default_encoder))", False),
        ("import json\nd = __import__('gc').get_referents(json.JSONDecoder.__dict__)[0]\nk = list(d)[-1]\n"
         "d['renamed_' + k] = d.pop(k)",
         "any(k.startswith('renamed_') for k in vars(__import__('json').JSONDecoder))", False),
        # What an execution leaves alive cannot be hidden from the collector by freezing it.
        ("import atexit, gc\natexit.register(lambda: print(SECRET))\ngc.freeze()",
         "__import__('gc').get_freeze_count() < 10**9", True),
    ],
    ids=["module_attribute", "builtin", "class_attribute", "function_code", "function_defaults",
         "instance_attribute", "sys_modules_entry", "monitoring_tool", "instance_rename", "class_rename",
         "frozen_survivor"],
)
def test_monkeypatching_retires_the_interpreter(client: McpClient, plant: str, probe: str, expected) -> None:
    first = lane_of(client, f"SECRET = {json.dumps(SECRET)}\n{plant}")
    lane, value = next_lane(client, probe)
    assert value == expected, value
    assert lane != first, "the next execution ran in a fresh interpreter"


@pytest.mark.parametrize(
    "plant, probe, expected",
    [
        ("sys.path.insert(0, '/planted')", "'/planted' in __import__('sys').path", False),
        ("sys.path[-1] = '/planted'", "'/planted' in __import__('sys').path", False),
        ("import html.entities\nhtml.entities.html5['amp;'] = SECRET", "__import__('html.entities').entities.html5['amp;']", "&"),
        ("os.environ['PLANTED'] = SECRET", "__import__('os').environ.get('PLANTED')", None),
        ("os.chdir('/tmp')", "__import__('os').getcwd()", "/home/pyodide"),
        ("import io\nsys.stdout = io.StringIO()", "print('visible') or 'printed'", "printed"),
        ("import gc\ngc.callbacks.append(lambda *a: print(SECRET))", "len(__import__('gc').callbacks)", 0),
        ("import warnings\nwarnings.simplefilter('ignore')\nwarnings.filters.insert(0, ('error', None, Warning, None, 0))",
         "__import__('warnings').filters[0][0]", "default"),
        ("sys.setrecursionlimit(77)", "__import__('sys').getrecursionlimit() != 77", True),
        ("import builtins\nbuiltins.planted = SECRET", "getattr(__import__('builtins'), 'planted', None)", None),
        ("sys.settrace(lambda *a: print(SECRET))", "__import__('sys').gettrace()", None),
        ("sys.setprofile(lambda *a: print(SECRET))", "__import__('sys').getprofile()", None),
    ],
    ids=["sys_path", "sys_path_same_length", "module_dict_same_length", "environ", "cwd", "stdout", "gc_callbacks", "warnings_filters", "recursion_limit",
         "new_builtin", "trace_hook", "profile_hook"],
)
def test_interpreter_settings_are_put_back(client: McpClient, plant: str, probe: str, expected) -> None:
    ok_py(client, f"import os, sys\nSECRET = {json.dumps(SECRET)}\n{plant}")
    time.sleep(0.3)
    ex = ok_py(client, probe)
    assert ex.result == expected, ex.describe()
    assert SECRET not in ex.output, ex.describe()


def test_a_python_audit_hook_is_refused(client: McpClient) -> None:
    ok_py(client, f"import sys\nsys.addaudithook(lambda e, a: print({json.dumps(SECRET)}, e))")
    time.sleep(0.3)
    ex = ok_py(client, "import json\nopen('/tmp/x', 'w').write('1')\nexec('1')\n'done'")
    assert ex.result == "done" and SECRET not in ex.output, ex.describe()


@pytest.mark.parametrize(
    "plant, probe",
    [
        ("js.globalThis.planted = SECRET", "str(getattr(js.globalThis, 'planted', None))"),
        ("js.JSON.parse = js.eval('() => 1')", "js.JSON.parse('[2]')[0]"),
        ("js.eval('Object.prototype.polluted = ' + repr(SECRET))", "str(js.eval('({}).polluted'))"),
        ("js.eval('Array.prototype.extra = 1')", "str(js.eval('[].extra'))"),
        ("import pyodide_js\npyodide_js.planted = SECRET", "str(getattr(__import__('pyodide_js'), 'planted', None))"),
    ],
    ids=["global", "builtin_function", "object_prototype", "array_prototype", "pyodide_api"],
)
def test_writing_through_js_retires_the_interpreter(client: McpClient, plant: str, probe: str) -> None:
    first = lane_of(client, f"import js\nSECRET = {json.dumps(SECRET)}\n{plant}")
    lane, value = next_lane(client, f"(lambda js: {probe})(__import__('js'))")
    assert value in ("None", "undefined", 2), value
    assert lane != first, "the next execution ran in a fresh interpreter"


def test_files_left_in_tmp_and_home_are_removed(client: McpClient) -> None:
    first = lane_of(
        client,
        f"import os\nos.makedirs('/tmp/deep/er', exist_ok=True)\nopen('/tmp/deep/er/s.txt', 'w').write({json.dumps(SECRET)})\n"
        f"open('/home/pyodide/notes.txt', 'w').write({json.dumps(SECRET)})",
    )
    lane, found = next_lane(
        client, "[os.path.exists(p) for p in ('/tmp/deep', '/home/pyodide/notes.txt')] if (os := __import__('os')) else 0"
    )
    assert found == [False, False]
    assert lane == first, "files in the cleaned places are removed, the lane stays"


def test_a_file_written_elsewhere_retires_the_interpreter(client: McpClient) -> None:
    first = lane_of(
        client,
        f"import sys\nopen(sys.path[-1] + '/planted_mod.py', 'w').write('SECRET = ' + repr({json.dumps(SECRET)}))",
    )
    lane, value = next_lane(
        client, "(lambda: (__import__('importlib').util.find_spec('planted_mod') is None))()"
    )
    assert value is True, "the planted module is not there"
    assert lane != first, "the next execution ran in a fresh interpreter"


@pytest.mark.parametrize(
    "plant",
    [
        "import asyncio\nasyncio.get_event_loop().call_later(0.4, lambda: print(SECRET))",
        "import js\nfrom pyodide.ffi import create_once_callable\njs.setTimeout(create_once_callable(lambda: print(SECRET)), 400)",
        "import asyncio\nasync def spy():\n    await asyncio.sleep(0.4)\n    print(SECRET, sorted(__import__('sys').modules['__main__'].__dict__))\n"
        "keep = asyncio.ensure_future(spy())",
        "import js\nfrom pyodide.ffi import create_proxy\nch = js.MessageChannel.new()\n"
        "ch.port1.onmessage = create_proxy(lambda e: print(SECRET))\njs.globalThis.keep = ch",
    ],
    ids=["call_later", "js_set_timeout", "pending_task", "js_message_port"],
)
def test_callbacks_of_an_ended_execution_never_run_in_the_next(client: McpClient, plant: str) -> None:
    first = lane_of(client, f"SECRET = {json.dumps(SECRET)}\n{plant}")
    time.sleep(0.3)
    ex = ok_py(client, "import asyncio, js\nmine = 1\nawait asyncio.sleep(0.8)\n[js.performance.timeOrigin, 'second']")
    assert ex.result[1] == "second" and SECRET not in ex.output, ex.describe()
    assert ex.result[0] != first, "the next execution ran in a fresh interpreter"


def test_an_error_leaves_the_lane_ready(client: McpClient) -> None:
    ex = ok_py(client, "import js\nt = js.performance.timeOrigin\ntry:\n    1/0\nexcept ZeroDivisionError as e:\n    err = e\nt")
    first = ex.result
    lane, value = next_lane(client, "'clean'")
    assert value == "clean" and lane == first, (lane, first)


def test_executions_beyond_the_lanes_wait_for_one(start_server) -> None:
    """`max_lanes_python` bounds the Pyodides a session's process holds: with 1, three executions
    sent at once all succeed, one after another (each starts once the one before it has ended):
    the first in the single-use lane its process was started for, then the other two in the one
    lane that replaces it."""
    client = start_server({"CODE_EXECUTOR_MAX_LANES_PYTHON": "1"})
    code = (
        "import asyncio, js, time\nt0 = time.time()\nawait asyncio.sleep(0.5)\n"
        "[js.performance.timeOrigin, t0, time.time()]"
    )
    replies = client.call_many([("executePython", {"code": code})] * 3, timeout=120)
    runs = []
    for reply in replies:
        sc = reply.structured_content or {}
        assert sc.get("success") is True, sc
        runs.append(sc["result"])
    runs.sort(key=lambda run: run[1])
    assert runs[0][0] != runs[1][0] == runs[2][0], runs
    for (_, _, ended), (_, started, _) in zip(runs, runs[1:]):
        assert started >= ended, runs


def test_a_lane_whose_memory_grew_is_retired(client: McpClient) -> None:
    # WebAssembly memory never shrinks: a lane that held 200 MB would keep it for every later
    # execution (and its process near its data limit).
    first = lane_of(client, "x = bytearray(200 * 1024 * 1024)\nx[-1] = 1\ndel x")
    lane, _ = next_lane(client)
    assert lane != first, "the next execution ran in a fresh interpreter"
    # A small allocation keeps the lane.
    first = lane_of(client, "x = bytearray(1024 * 1024)\ndel x")
    lane, _ = next_lane(client)
    assert lane == first, "the lane served on"
