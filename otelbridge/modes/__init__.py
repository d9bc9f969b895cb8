"""One runner per mode, each wiring a source to a :class:`otelbridge.pipeline.Pipeline`:
:mod:`.live` (the tee's decoding process: pipe and wrapper modes), :mod:`.replay` (recordings),
:mod:`.follow` (a file a CLI writes); :mod:`.loop` the event loop of those that run one."""
