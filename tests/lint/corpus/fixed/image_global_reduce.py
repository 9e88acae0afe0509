"""The image encoder, fixed: it reduces on the attention-TP group, whose members serve the
same DP rank's batch, so they all hold the image or none does."""

from sglang.srt.layers.dp_attention import get_attention_tp_group


class VisionEncoder:
    def __init__(self, server_args, proj):
        self.enable_dp_attention = server_args.enable_dp_attention
        self.proj = proj

    def forward(self, forward_batch):
        embeds = forward_batch.input_embeds
        if forward_batch.contains_image_inputs():
            embeds = embeds + self._encode(forward_batch.pixel_values)
        return embeds

    def _encode(self, pixel_values):
        partial = self.proj(pixel_values)
        return get_attention_tp_group().all_reduce(partial)
