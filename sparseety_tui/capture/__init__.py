"""Record real MoE routing: from a transformers model (forward hooks; needs torch, the
``capture`` extra) and from saved vLLM / SGLang responses that carry routed experts.

    from sparseety_tui.capture.hooks import RoutingCapture
    with RoutingCapture(model) as cap:      # refuses (class, version) what it cannot read
        model.generate(ids, max_new_tokens=16)
    cap.rows()                               # [positions][moe_layers][top_k] ids + weights

Nothing outside this package (and the cli's ``record``, lazily) imports it: the import
contract in pyproject.toml keeps torch out of every other command.
"""
