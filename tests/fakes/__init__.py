"""Every loopback server the tests talk to, in one package.

- `protocols`: strict fakes of the provider APIs (OpenAI and Azure, Anthropic, Gemini, a
  custom chatbot API) that record what they received and answer from a script;
- `rules`: the documented request rules those fakes enforce;
- `answering`: protocol fakes that answer like a model in any role of a run;
- `sweep`: a deterministic OpenAI-compatible server for whole sweeps, with seeded faults;
- `shared`: the rate bucket and the fake judge's answer, shared with the benchmark's
  standalone server (`benchmarks/fake_server.py`), so tests and benchmark agree.

Nothing is re-exported here: the benchmark server imports `shared` alone and should not
pay for aiohttp's test utilities.
"""
