variable "seed" {
  type      = string
  ephemeral = true
}

output "derived" {
  value     = "${var.seed}-derived"
  ephemeral = true
}
