package chat

import "encoding/json"

// Message is one turn of a conversation, shaped like an OpenAI / Hugging
// Face chat message. Fields left empty are absent from the template's view
// (a template's "message.name is defined" is false), except Content, which
// is null when nil.
//
// Raw, when set, replaces every other field: it is the message object as
// JSON, passed to the template with its keys in order. Use it for fields
// this struct does not name.
type Message struct {
	Role string `json:"role"`
	// Content is a string, nil, or a list of parts such as
	// []ContentPart{{Type: "text", Text: "hi"}}.
	Content          any        `json:"content"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string     `json:"tool_call_id,omitempty"`
	Name             string     `json:"name,omitempty"`

	Raw json.RawMessage `json:"-"`
}

// MarshalJSON writes Raw verbatim when set, else the named fields in order.
func (m Message) MarshalJSON() ([]byte, error) {
	if len(m.Raw) > 0 {
		return m.Raw, nil
	}
	type plain Message // no MarshalJSON method: avoids recursion
	return json.Marshal(plain(m))
}

// ContentPart is one element of a list-valued Content.
type ContentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL is the image reference of an "image_url" content part.
type ImageURL struct {
	URL string `json:"url"`
}

// ToolCall is a call the assistant made, in OpenAI's shape.
type ToolCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and its arguments. Arguments is usually a
// JSON object (pass json.RawMessage to keep key order); some clients send a
// JSON-encoded string instead, which templates then print as is.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments any    `json:"arguments"`
}
