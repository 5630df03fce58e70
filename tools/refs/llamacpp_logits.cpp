// llamacpp_logits: llama.cpp's float32 logits for a prompt of token ids, for the reference
// summaries in internal/testckpt/testdata (see README.md here). Written for hfstatic against
// libllama's public API (include/llama.h), as llama.cpp's own examples/ use it.
//
//   llamacpp_logits MODEL.gguf IDS OUT_PREFIX [N_GREEDY]
//
// IDS is a comma-separated list of token ids. Writes OUT_PREFIX.logits.f32 (float32
// little-endian [n_ids][n_vocab]: the logits after each prompt token, from one batch) and
// OUT_PREFIX.greedy.txt (N_GREEDY lines "id max_logit": greedy continuation, one token per
// decode step). CPU, f32 KV cache, flash attention off, 2 threads.
#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

static int fail(const char *msg) {
    std::fprintf(stderr, "llamacpp_logits: %s\n", msg);
    return 1;
}

static int argmax(const float *row, int n) {
    int best = 0;
    for (int j = 1; j < n; j++) {
        if (row[j] > row[best]) best = j;
    }
    return best;
}

int main(int argc, char **argv) {
    if (argc < 4) return fail("usage: llamacpp_logits MODEL.gguf IDS OUT_PREFIX [N_GREEDY]");
    const int n_greedy = argc > 4 ? std::atoi(argv[4]) : 16;
    std::vector<llama_token> ids;
    for (std::string s = argv[2]; !s.empty();) {
        size_t comma = s.find(',');
        ids.push_back((llama_token) std::atoi(s.substr(0, comma).c_str()));
        s = comma == std::string::npos ? "" : s.substr(comma + 1);
    }
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) return fail("cannot load model");
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = cp.n_batch = cp.n_ubatch = 512;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.n_threads = cp.n_threads_batch = 2;
    llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) return fail("cannot create context");
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

    llama_batch batch = llama_batch_init((int) ids.size(), 0, 1);
    for (size_t i = 0; i < ids.size(); i++) {
        batch.token[i] = ids[i];
        batch.pos[i] = (llama_pos) i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = (int) ids.size();
    if (llama_decode(ctx, batch) != 0) return fail("prompt decode failed");
    std::string prefix = argv[3];
    FILE *f = std::fopen((prefix + ".logits.f32").c_str(), "wb");
    if (!f) return fail("cannot write logits");
    for (size_t i = 0; i < ids.size(); i++) {
        std::fwrite(llama_get_logits_ith(ctx, (int) i), sizeof(float), n_vocab, f);
    }
    std::fclose(f);

    FILE *g = std::fopen((prefix + ".greedy.txt").c_str(), "w");
    if (!g) return fail("cannot write greedy ids");
    const float *last = llama_get_logits_ith(ctx, (int) ids.size() - 1);
    for (int k = 0; k < n_greedy; k++) {
        llama_token next = argmax(last, n_vocab);
        std::fprintf(g, "%d %.6f\n", next, last[next]);
        llama_batch one = llama_batch_get_one(&next, 1);
        if (llama_decode(ctx, one) != 0) return fail("greedy decode failed");
        last = llama_get_logits_ith(ctx, -1);
    }
    std::fclose(g);
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
