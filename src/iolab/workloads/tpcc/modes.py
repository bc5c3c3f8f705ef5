"""How a transaction reaches the database: one call of a server-side routine, or client SQL."""

SERVER = "server"
CLIENT = "client"
MODES = (SERVER, CLIENT)
