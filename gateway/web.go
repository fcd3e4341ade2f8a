package gateway

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/drovehq/drove/gateway/console"
)

// registerConsole serves the web console (gateway/console) under
// /console/, and sends / there. The console's pages carry no data: its
// script reads the API with the caller's token, so the pages need none.
func registerConsole(r *gin.Engine) {
	h := gin.WrapH(console.Handler())
	r.GET(console.Prefix+"*path", h)
	r.GET("/", func(c *gin.Context) { c.Redirect(http.StatusFound, console.Prefix) })
}
