"""Trial tables of the experiment families: one module per family (``tables/<family>.py``).

Each holds the experiment's name (``EXPERIMENT``), the :class:`~cogtestbed.schema.TrialSchema`
its environment declares (``SCHEMA``, the spec's ``table_schema``) and whatever reading or building
such a table needs without the environment (stimulus vocabularies, the builders an importer shares
with the environment).  Nothing here imports an environment, an agent, gymnasium or pydantic.
"""
