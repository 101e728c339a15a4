package wire

import "strings"

// Content types of InputContent.
const (
	ContentText  = "input_text"
	ContentImage = "input_image"
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

// InputContent is one content item: text or an image reference.
type InputContent struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
}

// HasImage reports whether any content item is an image, which a text-only
// transport must reject (see CheckTextOnly).
func (in MessageInput) HasImage() bool {
	for _, m := range in {
		for _, c := range m.Content {
			if c.Type == ContentImage {
				return true
			}
		}
	}
	return false
}

// validate checks the input with paths relative to the input itself.
func (in MessageInput) validate() *FieldError {
	c := newChecker("")
	if len(in) == 0 {
		c.fail("", RuleRequired, "at least one message is required")
	}
	for i, m := range in {
		mp := "[" + itoa(i) + "]"
		if len(m.Content) == 0 {
			c.fail(mp+".content", RuleRequired, "a message needs at least one content item")
		}
		meaningful := false
		for j, ct := range m.Content {
			cp := mp + ".content[" + itoa(j) + "]"
			switch ct.Type {
			case ContentText:
				c.forbidden(cp+".image_url", ct.ImageURL != "", "input_text carries no image_url")
				meaningful = meaningful || strings.TrimSpace(ct.Text) != ""
			case ContentImage:
				c.forbidden(cp+".text", ct.Text != "", "input_image carries no text")
				if strings.TrimSpace(ct.ImageURL) == "" {
					c.fail(cp+".image_url", RuleRequired, "input_image needs an image_url")
				}
				meaningful = true
			default:
				c.oneOf(cp+".type", ct.Type, ContentText, ContentImage)
			}
		}
		if len(m.Content) > 0 && !meaningful {
			c.fail(mp+".content", RuleRequired, "a message needs non-blank text or an image")
		}
	}
	return c.first
}

// CheckTextOnly rejects image content for a transport that carries text
// only: dropping the image silently would change what the model sees.
func (in MessageInput) CheckTextOnly() error {
	for i, m := range in {
		for j, ct := range m.Content {
			if ct.Type == ContentImage {
				return fieldErr("", "["+itoa(i)+"].content["+itoa(j)+"]", RuleUnsupported, "this transport carries text only; images are rejected, never dropped")
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
