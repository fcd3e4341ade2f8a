package gateway

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/drovehq/drove/gateway/openapi"
)

// openAPIPath is where the API's description is served. It is outside
// the token check: the description is public, the data is not.
const openAPIPath = "/v1/openapi.json"

func serveOpenAPI(c *gin.Context) {
	c.Header("Cache-Control", "no-cache")
	c.Data(http.StatusOK, "application/json", openapi.JSON)
}
