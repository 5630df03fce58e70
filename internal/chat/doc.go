// Package chat renders Hugging Face chat templates: the Jinja programs stored
// in tokenizer_config.json that turn a conversation (messages, tools, flags)
// into the prompt text a model was trained on.
//
// It owns loading a template (a plain string or a named list, "default"
// chosen unless a name is asked), the environment Hugging Face gives
// templates (bos_token/eos_token, raise_exception, strftime_now, tojson with
// Python's separators, trim_blocks and lstrip_blocks, loop controls) and the
// conversion of messages and tools into template values with their key order
// kept. Rendering must equal Hugging Face's own implementation byte for byte;
// testdata/README.md lists the known differences.
//
// It does not tokenize the prompt (package tokenizer does), parse model
// output back into tool calls, or decide which tokens stop generation.
package chat
