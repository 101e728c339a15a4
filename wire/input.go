package wire

import (
	"slices"
	"strconv"
	"strings"
)

// MessageInput is the ordered input of a Run, an execution start or an
// active input: messages in order, each with its content items in order.
// Adapters keep both orders and reject content they cannot carry; a
// text-only transport rejects an image instead of dropping it.
type MessageInput []InputMessage

// InputMessage is one message of a MessageInput.
type InputMessage struct {
	Content []InputContent `json:"content"`
}

// HasImage reports whether any content item is an image, which a text-only
// transport must reject (see CheckTextOnly).
func (in MessageInput) HasImage() bool {
	for _, m := range in {
		if slices.ContainsFunc(m.Content, InputContent.isImage) {
			return true
		}
	}
	return false
}

// Validate checks an ordered MessageInput on its own (the public API
// validates a Turn's input before it stores it); the error's field path is
// relative to the input ("[0].content[1].text").
func (in MessageInput) Validate() error {
	if err := in.validate(); err != nil {
		return err
	}
	return nil
}

// validate checks the input with paths relative to the input itself. Each
// item may have empty or blank text on its own; a message as a whole needs
// at least one character of text or an image.
//
// decision: whitespace-only text is valid on the wire. Which text a
// Harness accepts is part of the message input contract and the engine
// profile (daemon-protocol.txt:98), decided at admission, not by the
// decoder; use WhitespaceOnly there. A message with no character and no
// image is still refused: "" cannot be told from missing text, so such a
// message carries nothing at all.
func (in MessageInput) validate() *FieldError {
	c := newChecker("")
	if len(in) == 0 {
		c.fail("", RuleRequired, "at least one message is required")
	}
	for i, m := range in {
		mp := "[" + strconv.Itoa(i) + "]"
		if len(m.Content) == 0 {
			c.fail(mp+".content", RuleRequired, "a message needs at least one content item")
		}
		meaningful := false
		for j, ct := range m.Content {
			c.nested(mp+".content["+strconv.Itoa(j)+"]", ct.validate(textMayBeEmpty))
			meaningful = meaningful || ct.isImage() || (ct.Type == ContentText && ct.Text != "")
		}
		if len(m.Content) > 0 && !meaningful {
			c.fail(mp+".content", RuleRequired, "a message needs text or an image")
		}
	}
	return c.first
}

// WhitespaceOnly reports whether some message has no image and no text
// but whitespace: what a Harness whose engine profile refuses
// whitespace-only text must not be given.
func (in MessageInput) WhitespaceOnly() bool {
	for _, m := range in {
		if !slices.ContainsFunc(m.Content, func(ct InputContent) bool {
			return ct.isImage() || strings.TrimSpace(ct.Text) != ""
		}) {
			return true
		}
	}
	return false
}

// CheckTextOnly rejects image content for a transport that carries text
// only: dropping the image silently would change what the model sees.
func (in MessageInput) CheckTextOnly() error {
	for i, m := range in {
		for j, ct := range m.Content {
			if ct.isImage() {
				return fieldErr("", "["+strconv.Itoa(i)+"].content["+strconv.Itoa(j)+"]", RuleUnsupported, "this transport carries text only; images are rejected, never dropped")
			}
		}
	}
	return nil
}

// Text joins the text of a flat, text-only input: content items in order,
// messages separated by a blank line. Text is never trimmed.
func (in MessageInput) Text() string {
	var b strings.Builder
	for i, m := range in {
		if i > 0 {
			b.WriteString("\n\n")
		}
		for _, ct := range m.Content {
			b.WriteString(ct.Text)
		}
	}
	return b.String()
}
