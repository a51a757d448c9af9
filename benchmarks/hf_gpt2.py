"""transformers' GPT2LMHeadModel holding the course's weights, for the benchmarks' PyTorch
side (benchmarks/gpt2.py, benchmarks/training.py). Built from a GPT2Config, so nothing is
downloaded; dropout is off, as in the course's model."""
import numpy as np

import toy_model as tm


def hf_model(params, torch, transformers, n_head):
    """GPT2LMHeadModel with params' sizes and weights: tied when params has no w_u (as
    GPT-2's), otherwise with params' own output layer as lm_head."""
    tied = "w_u" not in params
    config = transformers.GPT2Config(
        vocab_size=len(params["wte"]), n_positions=len(params["wpe"]), n_embd=params["wte"].shape[1],
        n_layer=len(params["blocks"]), n_head=n_head, activation_function="gelu_new",
        n_inner=params["blocks"][0]["mlp"]["c_fc"]["w"].shape[1], layer_norm_epsilon=1e-5,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=tied)
    model = transformers.GPT2LMHeadModel(config).eval()
    hf_name = {"g": "weight", "w": "weight", "b": "bias"}
    state = {"transformer.wte.weight": params["wte"], "transformer.wpe.weight": params["wpe"]}
    for name in tm.weight_names({k: v for k, v in params.items() if k != "w_u"}):
        *where, last = name.replace("blocks.", "h.").split(".")
        if last in hf_name:
            state[".".join(["transformer", *where, hf_name[last]])] = tm.get_weight(params, name)
    if not tied:
        state["lm_head.weight"] = np.asarray(params["w_u"]).T       # [V, d], as nn.Linear keeps it
    state = {name: torch.tensor(np.array(w)) for name, w in state.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and set(missing) <= ({"lm_head.weight"} if tied else set()), (missing, unexpected)
    if tied:
        assert model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr()
    return model
