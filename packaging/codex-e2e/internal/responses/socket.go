package responses

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/coder/websocket"
)

// Frame handles one client frame of a Responses socket. create is the frame's request if it is
// a text frame holding a response.create, else nil. The events it returns are sent back in
// order, one JSON text frame each.
type Frame func(typ websocket.MessageType, data []byte, create map[string]any) []map[string]any

// ServeSocket accepts the WebSocket upgrade of r and hands every client frame to frame until the
// socket fails or closes. It returns why it ended: the handshake's, the read's or a write's error.
func ServeSocket(w http.ResponseWriter, r *http.Request, frame Frame) error {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return err
	}
	defer c.CloseNow()
	c.SetReadLimit(64 << 20)
	ctx := context.Background()
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			return err
		}
		var req map[string]any
		if typ != websocket.MessageText || json.Unmarshal(data, &req) != nil || req["type"] != "response.create" {
			req = nil
		}
		for _, ev := range frame(typ, data, req) {
			if err := c.Write(ctx, websocket.MessageText, JSON(ev)); err != nil {
				return err
			}
		}
	}
}
