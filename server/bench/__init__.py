"""`headstart bench`: simulated editors typing real files against one backend."""
