"""Load one runtime's event-definition file on its own, stubbing the heavy imports.

The definitions (msgspec structs) are executed exactly as shipped; only the imports that
the structs do not use (loggers, configs, network helpers) are replaced by stubs.
"""

import hashlib
import importlib.util
import sys
import types


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _stub(name, **attrs):
    m = types.ModuleType(name)
    for k, v in attrs.items():
        setattr(m, k, v)
    sys.modules[name] = m
    return m


class _Anything(types.ModuleType):
    """A stub module: any name imported from it is a placeholder class."""

    __path__ = []  # a package, so submodules can be stubbed too

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        v = type(name, (), {})
        setattr(self, name, v)
        return v


class _StubFinder:
    """Stubs every module under the given top-level package (the runtime's own,
    which is not installed): the event definitions do not use them."""

    def __init__(self, top):
        self.top = top

    def find_spec(self, name, path=None, target=None):
        if name == self.top or name.startswith(self.top + "."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return _Anything(spec.name)

    def exec_module(self, module):
        pass


def load(path, module_name):
    """Executes `path` as `module_name` with the stubs below in place; returns the module."""
    import logging

    saved = dict(sys.modules)
    # vLLM <= 0.23 kv_events.py
    _stub("vllm.config.kv_events", KVEventsConfig=type("KVEventsConfig", (), {}))
    _stub("vllm.logger", init_logger=logging.getLogger)
    _stub("vllm.v1.core.kv_cache_utils", ExternalBlockHash=bytes | int)
    _stub("vllm.utils.network_utils", get_ip=None, get_tcp_uri=None,
          is_valid_ipv6_address=None, split_zmq_path=None)
    # SGLang kv_events.py: every `sglang.*` import is stubbed by _StubFinder.
    finder = _StubFinder("sglang")
    sys.meta_path.insert(0, finder)
    try:
        spec = importlib.util.spec_from_file_location(module_name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = mod
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.meta_path.remove(finder)
        for k in list(sys.modules):
            if k not in saved and k != module_name:
                del sys.modules[k]
        sys.modules.update({k: v for k, v in saved.items()})
