"""Checks deploy/fuzz-job.yaml offline against the Kubernetes Job API's own
model (the `kubernetes` Python client's V1Job), not by eye:

- every field deserializes into the typed model (a wrong type or a missing
  required field is refused by the client's validation);
- nothing is dropped on the way: the model serialized back equals the file,
  so a misspelt or misplaced field (which the model would silently ignore)
  is an error;
- what the shards need holds: an Indexed Job, completions == parallelism ==
  SHARDS, and the command shards by JOB_COMPLETION_INDEX.

Usage: python3 deploy/check-job.py [deploy/fuzz-job.yaml]
"""

import sys

import yaml
from kubernetes.client import ApiClient


def deserialize(client, data, kind):
    # The client's own deserializer (what it does with an API response).
    return client._ApiClient__deserialize(data, kind)


def main(path):
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    client = ApiClient()
    job = deserialize(client, doc, "V1Job")
    back = client.sanitize_for_serialization(job)
    if back != doc:
        diff(doc, back, "")
        sys.exit(f"{path}: fields the V1Job model does not know (above)")
    spec = job.spec
    env = {e.name: e.value for e in spec.template.spec.containers[0].env}
    shards = int(env["SHARDS"])
    problems = []
    if spec.completion_mode != "Indexed":
        problems.append("completionMode must be Indexed (one shard per index)")
    if spec.completions != shards or spec.parallelism != shards:
        problems.append(
            f"completions {spec.completions} and parallelism {spec.parallelism} "
            f"must both equal SHARDS {shards}"
        )
    script = " ".join(spec.template.spec.containers[0].args)
    for needed in ("JOB_COMPLETION_INDEX + 1", '--shard "$i/$SHARDS"', "--format json"):
        if needed not in script:
            problems.append(f"the command lacks {needed!r}")
    if problems:
        sys.exit(f"{path}: " + "; ".join(problems))
    print(f"{path}: a valid batch/v1 Job, {shards} shards")


def diff(a, b, at):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in b:
                print(f"  {at}.{k}: not in the V1Job model (misspelt or misplaced?)")
            elif k not in a:
                print(f"  {at}.{k}: added by the model")
            else:
                diff(a[k], b[k], f"{at}.{k}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, f"{at}[{i}]")
    elif a != b:
        print(f"  {at}: {a!r} became {b!r}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "deploy/fuzz-job.yaml")
