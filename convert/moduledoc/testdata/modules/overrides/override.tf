variable "size" {
  description = "The size, from override.tf."
  default     = 2
  sensitive   = true
}

output "size" {
  value       = var.size
  description = "Overridden."
  sensitive   = true
}
