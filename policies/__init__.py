"""The vllm-platform policy pack: rules as plain functions over (resource type, properties).

`pulumi preview --policy-pack policies` runs them through `policies/__main__.py`, the offline
`python -m components plan` through `policies.rules.evaluate_plan`, and the tests call both.
"""
