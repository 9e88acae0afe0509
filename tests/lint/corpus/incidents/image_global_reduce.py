"""SGLang #34442's shape: with DP attention, a vision encoder reduces its output on the global
TP group, but only the DP group whose batch holds an image runs the encoder."""

from sglang.srt.distributed import tensor_model_parallel_all_reduce


class VisionEncoder:
    def __init__(self, server_args, proj):
        self.enable_dp_attention = server_args.enable_dp_attention
        self.proj = proj

    def forward(self, forward_batch):
        embeds = forward_batch.input_embeds
        if forward_batch.contains_image_inputs():  # GATE
            embeds = embeds + self._encode(forward_batch.pixel_values)
        return embeds

    def _encode(self, pixel_values):
        partial = self.proj(pixel_values)
        return tensor_model_parallel_all_reduce(partial)
