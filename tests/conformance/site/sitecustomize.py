# Loaded by every interpreter the conformance runner starts (it puts this
# folder on PYTHONPATH), including the processes FFCV's tests spawn, so the
# aliasing and the machine's substitutions hold in children as well.
import _ffcv_conformance

_ffcv_conformance.install()
